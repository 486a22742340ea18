#include "poet/lower/transfer_planner.h"

#include <gtest/gtest.h>

#include "hand_graph.h"

namespace poet {
namespace {

TEST(TransferPlanner, MovesThePageInEarlyEnoughToHideItAndNoEarlier) {
  const Graph g = testing::hand_graph();
  const auto costs = estimate_costs(g, testing::hand_device());
  const auto t = plan_transfers(g, costs, plan_from_text(testing::kHandLatePageIn, g, "test"), {});
  EXPECT_DOUBLE_EQ(t.stall_before_s, 5);
  EXPECT_DOUBLE_EQ(t.makespan_before_s, 27);
  EXPECT_DOUBLE_EQ(t.stall_after_s, 0);
  EXPECT_DOUBLE_EQ(t.makespan_after_s, 22);
  EXPECT_EQ(t.moved_pageins, 1u);
  // Before d_relu (6..14 s) is just in time: the page-in runs 7..12 s. Before loss would
  // hold the buffer longer for nothing.
  EXPECT_EQ(t.plan, plan_from_text("compute 0\ncompute 1\npageout 0\nfree 0\ncompute 2\npagein 0\ncompute 3\n"
                                   "free 1\nfree 2\ncompute 4\nfree 0\nfree 3\nfree 4\n",
                                   g, "expected"));
}

TEST(TransferPlanner, KeepsTheBudgetAndRejectsAnInvalidInput) {
  const Graph g = testing::hand_graph();
  const auto costs = estimate_costs(g, testing::hand_device());
  const Plan late = plan_from_text(testing::kHandLatePageIn, g, "test");
  const SimulationOptions options{.ram_budget_bytes = 140};  // the late plan's own peak
  const auto t = plan_transfers(g, costs, late, options);
  EXPECT_LE(simulate(g, costs, t.plan, options).peak_bytes, 140);
  EXPECT_THROW(plan_transfers(g, costs, late, {.ram_budget_bytes = 100}), InvalidPlan);
}

}  // namespace
}  // namespace poet
