#include "poet/lower/lower.h"

#include <gtest/gtest.h>

#include "hand_graph.h"

namespace poet {
namespace {

TEST(Lower, PlansTransfersSimulatesTheResultAndPlacesItsBuffersInPlanOrder) {
  const Graph g = testing::hand_graph();
  const GraphCosts costs = estimate_costs(g, testing::hand_device());
  const Plan late = plan_from_text(testing::kHandLatePageIn, g, "test");
  const LoweredPlan l = lower(g, costs, late, {.simulation = {.ram_budget_bytes = 140}});
  EXPECT_EQ(l.plan, plan_transfers(g, costs, late, {.ram_budget_bytes = 140}).plan);
  EXPECT_EQ(l.transfers.moved_pageins, 1u);
  EXPECT_TRUE(l.transfers.plan.instructions.empty());  // the plan is l.plan, once
  const SimulationResult again = simulate(g, costs, l.plan, {.ram_budget_bytes = 140});
  EXPECT_DOUBLE_EQ(l.simulation.makespan_s, again.makespan_s);
  EXPECT_EQ(l.simulation.peak_bytes, again.peak_bytes);
  ASSERT_EQ(l.buffers.size(), again.buffers.size());
  for (std::size_t b = 0; b < l.buffers.size(); ++b) {  // ranks in plan order
    EXPECT_EQ(l.buffers[b].alloc_rank, l.buffers[b].created_by);
    EXPECT_EQ(l.buffers[b].release_rank, l.buffers[b].released_by);
  }
  EXPECT_EQ(l.memory.offsets.size(), l.buffers.size());
  EXPECT_FALSE(find_overlap(l.buffers, l.memory));
}

TEST(Lower, WithoutTheTransferPlannerKeepsTheScheduleAsAlgorithm2MakesIt) {
  const Graph g = testing::hand_graph();
  const GraphCosts costs = estimate_costs(g, testing::hand_device());
  const Plan late = plan_from_text(testing::kHandLatePageIn, g, "test");
  const LoweredPlan l = lower(g, costs, late, {.plan_transfers = false});
  EXPECT_EQ(l.plan, late);
  EXPECT_DOUBLE_EQ(l.simulation.stall_s, 5);
  EXPECT_EQ(l.transfers.moved_pageins + l.transfers.moved_pageouts, 0u);
}

TEST(Lower, RejectsAPlanOverTheBudget) {
  const Graph g = testing::hand_graph();
  const GraphCosts costs = estimate_costs(g, testing::hand_device());
  EXPECT_THROW(lower(g, costs, plan_from_text(testing::kHandLatePageIn, g, "test"), {.simulation = {.ram_budget_bytes = 100}}),
               InvalidPlan);
}

}  // namespace
}  // namespace poet
