// DTR simulated ahead of time: a trace worked by hand, and its schedules on random graphs.
#include "poet/baselines/dtr.h"

#include <gtest/gtest.h>

#include <random>

#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "hand_graph.h"
#include "random_graphs.h"
#include "simulated.h"

namespace poet {
namespace {

// x -> a -> b -> c -> loss, then dc = g(loss, c), db = g(dc, b), da = g(db, a), dx = g(da, x).
// Bytes: x, a, c 40; b 80; loss 20; gradients 40. FLOPs (= seconds on the hand device):
// a 4, b 2, c 8, loss 2, gradients 1.
Graph trace_graph() {
  Graph g("dtr_trace");
  const auto add = [&](const char* name, OpKind op, Role role, std::int64_t elems, double flops,
                       std::vector<NodeId> in) { return testing::add_hand_node(g, name, op, role, elems, flops, std::move(in)); };
  add("x", OpKind::Input, Role::Forward, 10, 0, {});
  add("a", OpKind::ReLU, Role::Forward, 10, 4, {0});
  add("b", OpKind::ReLU, Role::Forward, 20, 2, {1});
  add("c", OpKind::ReLU, Role::Forward, 10, 8, {2});
  add("loss", OpKind::SoftmaxCrossEntropy, Role::Loss, 5, 2, {3});
  add("dc", OpKind::ChainGradient, Role::Backward, 10, 1, {4, 3});
  add("db", OpKind::ChainGradient, Role::Backward, 10, 1, {5, 2});
  add("da", OpKind::ChainGradient, Role::Backward, 10, 1, {6, 1});
  add("dx", OpKind::ChainGradient, Role::Backward, 10, 1, {7, 0});
  return g;
}

// The trace under 200 B (no fixed memory). Clock = computes so far; h = cost / (bytes x
// staleness), staleness = (this compute's number) - (number of the last compute touching it).
//   #1 x, #2 a, #3 b: 160 B.  #4 c: 160 + 40 = 200, fits.
//   #5 loss needs 20 more (220). Candidates (not read by loss, not the input x):
//       a: cost 4, 40 B, last touched by #3 (b read it): h = 4 / (40 x 2) = 0.05
//       b: cost 2, 80 B, last touched by #4 (c read it): h = 2 / (80 x 1) = 0.025
//     -> evict b (stage 4). 140 B after loss.
//   #6 dc: 180 B; loss and c are dead after it: x, a, dc = 120 B.
//   Stage 6 (db) reads b, evicted: recompute b from a (resident). #7 b: 200 B.
//     #8 db needs 40 more (240). a is no longer read by this stage; dc and b are.
//       a: cost 4 (x resident, no evicted descendant), 40 B, touched by #7: h = 0.1
//     -> evict a (stage 6). db: 200 B; dc and b dead: x, db = 80 B.
//   Stage 7 (da) reads a, evicted: #9 a, #10 da. Stage 8: #11 dx.
// Evictions: b at stage 4, a at stage 6; recomputations: b in stage 6, a in stage 7.
TEST(BaselineDtr, EvictionOrderOnAHandTrace) {
  const Graph g = trace_graph();
  const auto costs = estimate_costs(g, testing::hand_device());
  auto run = run_dtr(g, costs, 200);
  ASSERT_TRUE(std::holds_alternative<DtrRun>(run)) << std::get<std::string>(run);
  const DtrRun& dtr = std::get<DtrRun>(run);
  EXPECT_EQ(dtr.evictions, (std::vector<DtrEviction>{{4, 2}, {6, 1}}));
  for (std::size_t t = 0; t < g.size(); ++t) {
    SparseRow expected = t == 6 ? SparseRow{2, 6} : t == 7 ? SparseRow{1, 7} : SparseRow{static_cast<NodeId>(t)};
    EXPECT_EQ(dtr.schedule.R.row(t), expected) << "stage " << t;
  }
  const SimulationResult sim = simulate(g, costs, plan_from_schedule(dtr.schedule, g), {.ram_budget_bytes = 200});
  EXPECT_EQ(sim.peak_bytes, 200);
  EXPECT_EQ(sim.recomputes, 2u);
}

// x -> a -> b -> c, x -> e; loss = f(c, e); g1 = (loss, c), g2 = (g1, b, e), g3 = (g2, a),
// g4 = (g3, x). Every tensor 40 B but the loss (20 B). Seconds: a 1, b 2, e 1.2, c 1,
// the rest 1 (x 0). The second eviction is where the evicted neighbourhood decides.
Graph neighbourhood_graph() {
  Graph g("dtr_neighbourhood");
  const auto add = [&](const char* name, OpKind op, Role role, std::int64_t elems, double flops,
                       std::vector<NodeId> in) { return testing::add_hand_node(g, name, op, role, elems, flops, std::move(in)); };
  add("x", OpKind::Input, Role::Forward, 10, 0, {});
  add("a", OpKind::ReLU, Role::Forward, 10, 1, {0});
  add("b", OpKind::ReLU, Role::Forward, 10, 2, {1});
  add("e", OpKind::ReLU, Role::Forward, 10, 1.2, {0});
  add("c", OpKind::ReLU, Role::Forward, 10, 1, {2});
  add("loss", OpKind::SoftmaxCrossEntropy, Role::Loss, 5, 1, {4, 3});
  add("g1", OpKind::ChainGradient, Role::Backward, 10, 1, {5, 4});
  add("g2", OpKind::ChainGradient, Role::Backward, 10, 1, {6, 2, 3});
  add("g3", OpKind::ChainGradient, Role::Backward, 10, 1, {7, 1});
  add("g4", OpKind::ChainGradient, Role::Backward, 10, 1, {8, 0});
  return g;
}

// Under 200 B: #1 x, #2 a, #3 b, #4 e, #5 c: 200 B.
//   #6 loss (+20) evicts from a (cost 1, staleness 6 - 3 = 3: h = 1 / 120) and b (cost 2,
//   staleness 1: h = 2 / 40); c and e are read by loss -> a. 180 B after loss.
//   #7 g1 (+40) chooses between
//       b: cost 2 + 1 for its evicted parent a, staleness 7 - 5 = 2: h = 3 / 80  = 0.0375
//       e: cost 1.2, nothing evicted around it, staleness 1:         h = 1.2 / 40 = 0.03
//     -> e. (With the local cost alone b's h would be 2 / 80 = 0.025 and b would go.)
//   Stage 7 recomputes e for g2; stage 8 recomputes a for g3.
TEST(BaselineDtr, EvictedNeighbourhoodCountsInTheCost) {
  const Graph g = neighbourhood_graph();
  const auto costs = estimate_costs(g, testing::hand_device());
  auto run = run_dtr(g, costs, 200);
  ASSERT_TRUE(std::holds_alternative<DtrRun>(run)) << std::get<std::string>(run);
  const DtrRun& dtr = std::get<DtrRun>(run);
  EXPECT_EQ(dtr.evictions, (std::vector<DtrEviction>{{5, 1}, {6, 3}}));
  EXPECT_EQ(dtr.schedule.R.row(7), (SparseRow{3, 7}));
  EXPECT_EQ(dtr.schedule.R.row(8), (SparseRow{1, 8}));
  EXPECT_NO_THROW(simulate(g, costs, plan_from_schedule(dtr.schedule, g), {.ram_budget_bytes = 200}));
}

TEST(BaselineDtr, StuckWhenTheStageItselfDoesNotFit) {
  const Graph g = trace_graph();
  const auto costs = estimate_costs(g, testing::hand_device());
  // Stage 6 holds x (never evicted), dc, the recomputed b and db: 200 B at least.
  auto run = run_dtr(g, costs, 199);
  ASSERT_TRUE(std::holds_alternative<std::string>(run));
  EXPECT_NE(std::get<std::string>(run).find("nothing else is left to evict"), std::string::npos)
      << std::get<std::string>(run);
  const BaselineResult r = dtr_for_budget(g, costs, {.ram_budget_bytes = 199});
  EXPECT_FALSE(r.found());
  EXPECT_FALSE(r.reason.empty());
}

TEST(BaselineDtr, UnconstrainedIsCheckpointAll) {
  const Graph g = trace_graph();
  const auto costs = estimate_costs(g, testing::hand_device());
  const BaselineResult r = dtr_for_budget(g, costs, {});
  ASSERT_TRUE(r.found()) << r.reason;
  EXPECT_EQ(r.schedule->R, checkpoint_all_schedule(g).R);
  EXPECT_EQ(r.simulation->recomputes, 0u);
}

TEST(BaselineDtr, RandomGraphsValidateWithinTheBudgetOrSayWhy) {
  std::mt19937 rng(11);
  int found_tighter = 0, recomputing = 0, refused = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const Graph g = testing::random_graph(rng, 14 + trial);
    const auto costs = estimate_costs(g, testing::hand_device());
    const std::int64_t all_peak = testing::checkpoint_all_peak(g, costs);
    const std::int64_t smallest = g.largest_footprint().bytes;
    // Random graphs this small need most of checkpoint-all's peak for one node, so the
    // budgets are spread between that and the peak.
    const std::int64_t span = all_peak - smallest;
    for (std::int64_t budget : {all_peak, smallest + span / 2, smallest + span / 4, smallest, smallest - 1}) {
      const BaselineResult r = dtr_for_budget(g, costs, {.ram_budget_bytes = budget});
      if (!r.found()) {
        EXPECT_FALSE(r.reason.empty());
        ++refused;
        continue;
      }
      EXPECT_NO_THROW(simulate(g, costs, plan_from_schedule(*r.schedule, g), {.ram_budget_bytes = budget}))
          << "trial " << trial << " budget " << budget;
      if (budget == all_peak) {
        EXPECT_EQ(r.simulation->recomputes, 0u) << "trial " << trial;
      }
      if (budget < all_peak) ++found_tighter;
      if (r.simulation->recomputes > 0) ++recomputing;
    }
    EXPECT_FALSE(dtr_for_budget(g, costs, {.ram_budget_bytes = smallest - 1}).found());
  }
  EXPECT_GE(found_tighter, 15);  // 21 with this seed
  EXPECT_GE(recomputing, 10);
  EXPECT_GE(refused, 20);
}

}  // namespace
}  // namespace poet
