// Properties over hundreds of seeded random DAGs (up to 200 nodes).
#include <gtest/gtest.h>

#include <random>

#include "poet/lower/transfer_planner.h"
#include "poet/plan/memory_plan.h"
#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/simulate/simulator.h"
#include "random_graphs.h"
#include "test_scale.h"

namespace poet {
namespace {

DeviceProfile slow_storage() {
  DeviceProfile d;
  d.name = "test";
  d.flops_per_second = 1e6;
  d.flops_per_joule = 1e7;
  d.pagein_latency_s = 1e-3;
  d.pagein_bytes_per_s = 2e3;  // a page-in of 1-4 KiB takes a few computes
  d.pageout_latency_s = 2e-3;
  d.pageout_bytes_per_s = 1e3;
  d.memory_power_w = 0.3;
  return d;
}

// Independent count of checkpoint-all's peak: walk the nodes in order; a tensor lives from
// its compute until the compute of its last user (or its own, if unused).
std::int64_t independent_checkpoint_all_peak(const Graph& g) {
  const auto users = g.users();
  std::int64_t live = 0, peak = 0;
  for (NodeId t = 0; t < static_cast<NodeId>(g.size()); ++t) {
    live += g.node(t).bytes;
    peak = std::max(peak, live);
    for (NodeId i = 0; i <= t; ++i) {
      const NodeId last = users[i].empty() ? i : users[i].back();
      if (last == t) live -= g.node(i).bytes;
    }
  }
  return peak;
}

const int kCases = testing::test_cases(300);

TEST(PlanProperty, CheckpointAllIsValidAndItsPeakMatchesAnIndependentCount) {
  std::mt19937 rng(20261122);
  for (int c = 0; c < kCases; ++c) {
    const int n = std::uniform_int_distribution<int>(2, 200)(rng);
    const Graph g = testing::random_graph(rng, n);
    const auto costs = estimate_costs(g, slow_storage());
    const auto r = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g));
    ASSERT_EQ(r.peak_activation_bytes, independent_checkpoint_all_peak(g)) << "case " << c << ", n=" << n;
    ASSERT_EQ(r.recomputes, 0u);
    ASSERT_DOUBLE_EQ(r.makespan_s, costs.total_compute_time_s);
  }
}

TEST(PlanProperty, StaticMemoryPlansNeverOverlap) {
  std::mt19937 rng(11);
  for (int c = 0; c < kCases; ++c) {
    const Graph g = testing::random_graph(rng, std::uniform_int_distribution<int>(2, 200)(rng));
    const auto r = simulate(g, estimate_costs(g, slow_storage()),
                            plan_from_schedule(testing::random_paging_schedule(rng, g, 0.3), g));
    const MemoryPlan greedy = plan_memory_greedy(r.buffers);
    ASSERT_FALSE(find_overlap(r.buffers, greedy)) << "case " << c << ": " << *find_overlap(r.buffers, greedy);
    const MemoryPlan linear = plan_memory_linear(r.buffers);
    ASSERT_FALSE(find_overlap(r.buffers, linear));
    ASSERT_GE(greedy.arena_bytes, greedy.peak_live_bytes);
    ASSERT_LE(greedy.arena_bytes, linear.arena_bytes);
  }
}

TEST(PlanProperty, TransferPlannerNeverBreaksTheBudgetNorIncreasesTheMakespan) {
  std::mt19937 rng(7);
  int improved = 0;
  for (int c = 0; c < kCases; ++c) {
    const int n = std::uniform_int_distribution<int>(4, 120)(rng);
    const Graph g = testing::random_graph(rng, n);
    const auto costs = estimate_costs(g, slow_storage());
    const Plan plan = plan_from_schedule(testing::random_paging_schedule(rng, g, 0.4), g);
    const auto before = simulate(g, costs, plan);
    // A budget between the plan's own peak and 25% above it.
    const auto budget = static_cast<std::int64_t>(static_cast<double>(before.peak_bytes) *
                                                  std::uniform_real_distribution<double>(1.0, 1.25)(rng));
    const SimulationOptions options{.ram_budget_bytes = budget};
    const auto planned = plan_transfers(g, costs, plan, options, 64);
    const auto after = simulate(g, costs, planned.plan, options);  // throws if over budget or invalid
    ASSERT_LE(after.makespan_s, before.makespan_s + 1e-12) << "case " << c;
    ASSERT_LE(after.peak_bytes, budget);
    ASSERT_DOUBLE_EQ(after.total_energy_j(), before.total_energy_j());  // reordering costs nothing
    ASSERT_DOUBLE_EQ(planned.makespan_after_s, after.makespan_s);
    if (after.makespan_s < before.makespan_s) ++improved;
  }
  // Not a tautology: on random paging plans the planner must find something to hide.
  EXPECT_GT(improved, kCases / 10);
}

}  // namespace
}  // namespace poet
