// Capuchin: paging first, recomputation only where paging cannot bring the peak down.
#include "poet/baselines/capuchin.h"

#include <gtest/gtest.h>

#include <random>

#include "poet/backward/backward.h"
#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "hand_graph.h"
#include "random_graphs.h"
#include "simulated.h"

namespace poet {
namespace {

TEST(BaselineCapuchin, PagesRatherThanRecomputesWhenTransfersAreCheap) {
  const Graph g = testing::chain_training_graph(12);
  const auto costs = estimate_costs(g, testing::device_with_transfers(0.01));
  const std::int64_t budget = testing::checkpoint_all_peak(g, costs) - 200;  // five of the 40 B activations
  const BaselineResult r = capuchin_for_budget(g, costs, {.ram_budget_bytes = budget});
  ASSERT_TRUE(r.found()) << r.reason;
  EXPECT_GT(r.simulation->pageouts, 0u);
  EXPECT_EQ(r.simulation->pageins, r.simulation->pageouts);
  EXPECT_EQ(r.simulation->recomputes, 0u);
  EXPECT_NO_THROW(simulate(g, costs, plan_from_schedule(*r.schedule, g), {.ram_budget_bytes = budget}));
}

TEST(BaselineCapuchin, RecomputesWhenPagingCannotFit) {
  const Graph g = testing::chain_training_graph(12);
  // A page-out outlasts the whole backward, so its buffer is never released in time.
  const auto costs = estimate_costs(g, testing::device_with_transfers(1e4));
  const std::int64_t budget = testing::checkpoint_all_peak(g, costs) - 200;
  const BaselineResult r = capuchin_for_budget(g, costs, {.ram_budget_bytes = budget});
  ASSERT_TRUE(r.found()) << r.reason;
  EXPECT_GT(r.simulation->recomputes, 0u);
  EXPECT_EQ(r.simulation->pageouts, 0u);
  EXPECT_NO_THROW(simulate(g, costs, plan_from_schedule(*r.schedule, g), {.ram_budget_bytes = budget}));
}

// A solve's time limit or Ctrl-C ends Capuchin between two of its simulations.
TEST(BaselineCapuchin, GivingUpEndsItBetweenSimulations) {
  const Graph g = testing::chain_training_graph(12);
  const auto costs = estimate_costs(g, testing::device_with_transfers(0.01));
  const SimulationOptions options{.ram_budget_bytes = testing::checkpoint_all_peak(g, costs) - 200};
  int asked = 0;
  const BaselineResult whole = capuchin_for_budget(g, costs, options, [&asked] { return ++asked, false; });
  ASSERT_TRUE(whole.found()) << whole.reason;
  EXPECT_EQ(whole.schedule, capuchin_for_budget(g, costs, options).schedule);
  ASSERT_GE(asked, 2);
  int left = asked - 1;  // gives up at the last question the whole run asked
  const BaselineResult stopped = capuchin_for_budget(g, costs, options, [&left] { return left-- == 0; });
  EXPECT_FALSE(stopped.found());
  EXPECT_EQ(stopped.reason, "capuchin: given up before its schedule fit the budget");
}

TEST(BaselineCapuchin, UnconstrainedIsCheckpointAll) {
  const Graph g = testing::chain_training_graph(6);
  const auto costs = estimate_costs(g, testing::hand_device());
  const BaselineResult r = capuchin_for_budget(g, costs, {});
  ASSERT_TRUE(r.found()) << r.reason;
  EXPECT_EQ(r.schedule->R, checkpoint_all_schedule(g).R);
  EXPECT_EQ(r.simulation->pageouts + r.simulation->recomputes, 0u);
}

TEST(BaselineCapuchin, RandomGraphsValidateWithinTheBudgetOrSayWhy) {
  std::mt19937 rng(12);
  int found_tighter = 0, paging = 0, recomputing = 0, refused = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const Graph g = testing::random_graph(rng, 14 + trial);
    // Transfers slow (the hand device's 10 B/s), cheap, or too slow to ever help.
    DeviceProfile device = trial % 3 == 0 ? testing::hand_device() : testing::device_with_transfers(trial % 3 == 1 ? 0.01 : 1e12);
    const auto costs = estimate_costs(g, device);
    const std::int64_t all_peak = testing::checkpoint_all_peak(g, costs);
    const std::int64_t smallest = g.largest_footprint().bytes;
    const std::int64_t span = all_peak - smallest;
    for (std::int64_t budget : {all_peak, smallest + span / 2, smallest + span / 4, smallest, smallest - 1}) {
      const BaselineResult r = capuchin_for_budget(g, costs, {.ram_budget_bytes = budget});
      if (!r.found()) {
        EXPECT_FALSE(r.reason.empty());
        ++refused;
        continue;
      }
      EXPECT_NO_THROW(simulate(g, costs, plan_from_schedule(*r.schedule, g), {.ram_budget_bytes = budget}))
          << "trial " << trial << " budget " << budget;
      if (budget < all_peak) ++found_tighter;
      if (r.simulation->pageouts > 0) ++paging;
      if (r.simulation->recomputes > 0) ++recomputing;
      if (trial % 3 == 2) {
        EXPECT_EQ(r.simulation->pageouts, 0u) << "trial " << trial << ": a page-out that never ends frees nothing";
      }
    }
    EXPECT_FALSE(capuchin_for_budget(g, costs, {.ram_budget_bytes = smallest - 1}).found());
  }
  // With this seed: 27, 16, 13 and 44.
  EXPECT_GE(found_tighter, 20);
  EXPECT_GE(paging, 10);
  EXPECT_GE(recomputing, 8);
  EXPECT_GE(refused, 20);
}

}  // namespace
}  // namespace poet
