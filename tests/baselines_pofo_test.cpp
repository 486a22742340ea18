// POFO: its dynamic program against brute force over the same space, and its schedules.
#include "poet/baselines/pofo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

#include "poet/backward/backward.h"
#include "poet/baselines/chen.h"
#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "hand_graph.h"
#include "random_graphs.h"
#include "simulated.h"

namespace poet {
namespace {

PofoChain random_pofo_chain(std::mt19937& rng, int steps) {
  std::uniform_int_distribution<std::int64_t> size(1, 6), gradient(0, 4);
  std::uniform_real_distribution<double> time(0.5, 3), transfer(0, 30);
  PofoChain c;
  for (int k = 0; k <= steps; ++k) {
    c.size.push_back(size(rng));
    c.forward_s.push_back(k > 0 ? time(rng) : 0);
    c.backward_s.push_back(k > 0 ? time(rng) : 0);
    c.gradient.push_back(k > 0 ? gradient(rng) : 0);
    c.transfer_s.push_back(transfer(rng));
    c.reads_output.push_back(k > 0 && std::bernoulli_distribution(0.5)(rng));
  }
  return c;
}

// Every assignment of Keep / Offload / Drop to x_1 .. x_{L-1}: the least time within `memory`.
std::optional<PofoEvaluation> brute_force(const PofoChain& chain, std::int64_t memory) {
  const int L = chain.steps();
  std::vector<PofoFate> fate(L + 1, PofoFate::Keep);
  int assignments = 1;
  for (int k = 1; k < L; ++k) assignments *= 3;
  std::optional<PofoEvaluation> best;
  for (int code = 0; code < assignments; ++code) {
    for (int k = 1, rest = code; k < L; ++k, rest /= 3) fate[k] = static_cast<PofoFate>(rest % 3);
    const PofoEvaluation e = pofo_evaluate(chain, fate);
    if (e.peak <= memory && (!best || e.time_s < best->time_s)) best = e;
  }
  return best;
}

TEST(BaselinePofo, DynamicProgramEqualsBruteForceOnChainsUpToEightNodes) {
  std::mt19937 rng(21);
  int feasible = 0, offloading = 0, dropping = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int steps = 1 + trial % 7;  // 2 .. 8 nodes
    const PofoChain chain = random_pofo_chain(rng, steps);
    std::int64_t total = 0;
    for (std::int64_t s : chain.size) total += s;
    for (std::int64_t memory = 0; memory <= total + 6; ++memory) {
      const auto dp = pofo_optimum(chain, memory);
      const auto brute = brute_force(chain, memory);
      ASSERT_EQ(dp.has_value(), brute.has_value()) << "trial " << trial << " memory " << memory;
      if (!dp) continue;
      ++feasible;
      EXPECT_LE(dp->evaluation.peak, memory);
      EXPECT_NEAR(dp->evaluation.time_s, brute->time_s, 1e-9 * brute->time_s)
          << "trial " << trial << " memory " << memory;
      for (PofoFate f : dp->fate) {
        offloading += f == PofoFate::Offload;
        dropping += f == PofoFate::Drop;
      }
    }
  }
  // The optima use all three fates, so the comparison covers each.
  EXPECT_GT(feasible, 200);
  EXPECT_GT(offloading, 20);
  EXPECT_GT(dropping, 20);
}

TEST(BaselinePofo, PlayOutOfAHandChain) {
  // x0 .. x3 of sizes 2 1 3 1; forward 1 s and backward 2 s a step; no gradient memory;
  // transfers of 10 s. Keep x1, drop x2:
  //   forward: computing x3 holds x0, x1, x2 (freed only after x3 reads it) and x3: 7;
  //   backward: step 3 recomputes x2 from x1 while x0, x1, x3 stay: 7 again.
  //   time: 3 forward + 6 backward + 1 recomputing x2 = 10.
  PofoChain c;
  c.size = {2, 1, 3, 1};
  c.forward_s = {0, 1, 1, 1};
  c.backward_s = {0, 2, 2, 2};
  c.gradient = {0, 0, 0, 0};
  c.transfer_s = {10, 10, 10, 10};
  c.reads_output = {false, true, true, true};
  const PofoEvaluation e = pofo_evaluate(c, {PofoFate::Keep, PofoFate::Keep, PofoFate::Drop, PofoFate::Keep});
  EXPECT_EQ(e.peak, 7);
  EXPECT_DOUBLE_EQ(e.time_s, 10);
  // Offloading x1 as well: what hides its transfer is the forward after x2 reads it (x3:
  // 1 s) and the backward before its segment (x1 .. x3) is reversed (none): 9 s show.
  const PofoEvaluation offload = pofo_evaluate(c, {PofoFate::Keep, PofoFate::Offload, PofoFate::Drop, PofoFate::Keep});
  EXPECT_DOUBLE_EQ(offload.time_s, 19);
}

TEST(BaselinePofo, OffloadsWhenTransfersHideAndRecomputesWhenTheyDoNot) {
  const Graph g = testing::chain_training_graph(std::vector<std::int64_t>(12, 10));
  const auto cheap = estimate_costs(g, testing::device_with_transfers(0.01));
  const std::int64_t budget = testing::checkpoint_all_peak(g, cheap) - 160;
  const BaselineResult offloading = pofo_for_budget(g, cheap, {.ram_budget_bytes = budget});
  ASSERT_TRUE(offloading.found()) << offloading.reason;
  EXPECT_GT(offloading.simulation->pageouts, 0u);
  EXPECT_EQ(offloading.simulation->recomputes, 0u);
  EXPECT_NO_THROW(simulate(g, cheap, plan_from_schedule(*offloading.schedule, g), {.ram_budget_bytes = budget}));

  const auto slow = estimate_costs(g, testing::device_with_transfers(1e6));
  const BaselineResult recomputing = pofo_for_budget(g, slow, {.ram_budget_bytes = budget});
  ASSERT_TRUE(recomputing.found()) << recomputing.reason;
  EXPECT_EQ(recomputing.simulation->pageouts, 0u) << recomputing.choice;
  EXPECT_GT(recomputing.simulation->recomputes, 0u);
}

// The DP's model keeps relu1's 75 KiB output until relu1's backward, which reads only its
// mask: at checkpoint-all's peak and some way above it, the model found no choice before
// its limit was searched for against the simulator.
TEST(BaselinePofo, FitsEveryBudgetFromCheckpointAllsPeakUpOnLenet) {
  const Graph g = build_model_training_graph("lenet5", {.batch_size = 4}, BackwardMode::Autodiff);
  for (const double transfer_s : {0.01, 1e6}) {
    const auto costs = estimate_costs(g, testing::device_with_transfers(transfer_s));
    const std::int64_t all_peak = testing::checkpoint_all_peak(g, costs);
    for (const double above : {1.0, 1.2, 1.5}) {
      const auto budget = static_cast<std::int64_t>(above * static_cast<double>(all_peak));
      const BaselineResult r = pofo_for_budget(g, costs, {.ram_budget_bytes = budget});
      ASSERT_TRUE(r.found()) << "transfers " << transfer_s << " budget " << budget << ": " << r.reason;
      EXPECT_NO_THROW(simulate(g, costs, plan_from_schedule(*r.schedule, g), {.ram_budget_bytes = budget}));
    }
  }
}

// Keeping every step keeps what their backward reads off the chain too (the ReLUs' masks,
// the max-pools' indices): no recomputation, checkpoint-all's energy at its peak. Laid out
// with the masks recomputed from the kept ReLU inputs, it had peaked above checkpoint-all
// (lenet5: 391,848 B against 360,504 B), so at that budget POFO recomputed 8 nodes.
TEST(BaselinePofo, KeepingEveryStepAtCheckpointAllsPeakIsCheckpointAll) {
  for (const char* model : {"lenet5", "vgg16_cifar"}) {
    const Graph g = build_model_training_graph(model, {.batch_size = 4}, BackwardMode::Autodiff);
    const auto costs = estimate_costs(g, testing::device_with_transfers(1e6));
    const SimulationResult all = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g));
    const BaselineResult r = pofo_for_budget(g, costs, {.ram_budget_bytes = all.peak_bytes});
    ASSERT_TRUE(r.found()) << model << ": " << r.reason;
    EXPECT_EQ(r.simulation->recomputes, 0u) << model << ": " << r.choice;
    EXPECT_EQ(r.simulation->pageouts, 0u) << model << ": " << r.choice;
    EXPECT_DOUBLE_EQ(r.simulation->total_energy_j(), all.total_energy_j()) << model;
  }
}

TEST(BaselinePofo, SaysItDoesNotApplyToAGraphThatIsNotAChain) {
  std::mt19937 rng(3);
  const Graph g = testing::random_graph(rng, 20);
  const BaselineResult r = pofo_for_budget(g, estimate_costs(g, testing::hand_device()), {});
  EXPECT_FALSE(r.found());
  EXPECT_NE(r.reason.find("chains only"), std::string::npos) << r.reason;
}

TEST(BaselinePofo, RandomChainsValidateWithinTheBudgetOrSayWhy) {
  std::mt19937 rng(22);
  std::uniform_int_distribution<std::int64_t> elems(1, 1024);
  int found_tighter = 0, refused = 0;
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<std::int64_t> sizes(4 + trial % 12);
    for (auto& s : sizes) s = elems(rng);
    const Graph g = testing::chain_training_graph(sizes);
    const auto costs = estimate_costs(g, trial % 2 ? testing::device_with_transfers(0.01) : testing::hand_device());
    const std::int64_t all_peak = testing::checkpoint_all_peak(g, costs);
    const std::int64_t smallest = g.largest_footprint().bytes;
    const std::int64_t span = all_peak - smallest;
    const BaselineResult roomy = pofo_for_budget(g, costs, {});
    ASSERT_TRUE(roomy.found()) << roomy.reason;
    EXPECT_EQ(roomy.simulation->recomputes + roomy.simulation->pageouts, 0u) << "trial " << trial;
    for (std::int64_t budget : {all_peak, smallest + span / 2, smallest + span / 4, smallest, smallest - 1}) {
      const BaselineResult r = pofo_for_budget(g, costs, {.ram_budget_bytes = budget});
      if (!r.found()) {
        EXPECT_FALSE(r.reason.empty());
        // POFO's space holds every Chen segment schedule (kept boundaries, dropped interiors).
        EXPECT_FALSE(chen_greedy_for_budget(g, costs, {.ram_budget_bytes = budget}).found())
            << "trial " << trial << " budget " << budget << ": " << r.reason;
        ++refused;
        continue;
      }
      EXPECT_NO_THROW(simulate(g, costs, plan_from_schedule(*r.schedule, g), {.ram_budget_bytes = budget}))
          << "trial " << trial << " budget " << budget;
      if (budget < all_peak) ++found_tighter;
    }
    EXPECT_FALSE(pofo_for_budget(g, costs, {.ram_budget_bytes = smallest - 1}).found());
  }
  EXPECT_GE(found_tighter, 15);  // 20 with this seed
  EXPECT_GE(refused, 20);
}

}  // namespace
}  // namespace poet
