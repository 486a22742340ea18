#include "poet/lower/lower.h"

#include <gtest/gtest.h>

#include "hand_graph.h"
#include "poet/backward/backward.h"
#include "poet/baselines/capuchin.h"
#include "poet/cost/device.h"
#include "poet/models/zoo.h"
#include "poet/schedule/checkpoint_all.h"

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
    EXPECT_GE(l.buffers[b].release_rank, l.buffers[b].released_by);  // held while paged out
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

// When each compute starts in `r` (the simulation of `plan`), by instruction; and when
// each buffer's bytes are free again (its release event).
struct Times {
  std::vector<double> compute_start, released;
};
Times times_of(const Plan& plan, const SimulationResult& r) {
  Times t{std::vector<double>(plan.instructions.size(), -1), {}};
  for (const BufferLife& b : r.buffers) {
    if (plan.instructions[b.created_by].kind == InstrKind::Compute) t.compute_start[b.created_by] = r.timeline[b.alloc_rank].time_s;
    t.released.push_back(b.release_rank < r.timeline.size() ? r.timeline[b.release_rank].time_s : 1e300);
  }
  return t;
}

// The property the executor's timing rests on: a compute given bytes another buffer held
// before it starts, in the simulation, after that buffer's release (the end of its
// page-out), so the executor does not wait there for a transfer the simulator had ended.
void expect_no_compute_reuses_bytes_in_transfer(const LoweredPlan& l) {
  const Times t = times_of(l.plan, l.simulation);
  for (std::size_t a = 0; a < l.buffers.size(); ++a)
    for (std::size_t b = 0; b < l.buffers.size(); ++b) {
      const BufferLife &first = l.buffers[a], &then = l.buffers[b];
      if (first.bytes == 0 || then.bytes == 0 || then.created_by < first.released_by || then.in_place_of == a ||
          l.plan.instructions[then.created_by].kind != InstrKind::Compute)
        continue;
      const std::int64_t oa = l.memory.offsets[a], ob = l.memory.offsets[b];
      if (oa < ob + then.bytes && ob < oa + first.bytes) {
        EXPECT_GE(t.compute_start[then.created_by], t.released[a])
            << "buffer " << b << " (instruction " << then.created_by << ") takes the bytes of buffer " << a;
      }
    }
}

TEST(Lower, HoldsTheBytesOfAPageOutUntilItEnds) {
  const Graph g = testing::hand_graph();
  const GraphCosts costs = estimate_costs(g, testing::hand_device());
  const Plan late = plan_from_text(testing::kHandLatePageIn, g, "test");
  // x (40 B) is paged out from t = 4 s to 7 s (1 s + 40 B at 20 B/s) and freed at once;
  // the loss (computed from t = 4 s) and d_relu (from t = 6 s) come before it ends.
  const LoweredPlan l = lower(g, costs, late, {.simulation = {.ram_budget_bytes = 1000}});
  const std::vector<BufferLife> plain = in_plan_order(l.simulation.buffers);
  bool held = false;
  for (std::size_t b = 0; b < l.buffers.size(); ++b)
    if (l.buffers[b].node == 0 && l.buffers[b].created_by == 0) {
      EXPECT_GT(l.buffers[b].release_rank, l.buffers[b].released_by);
      held = true;
    }
  EXPECT_TRUE(held);
  expect_no_compute_reuses_bytes_in_transfer(l);
  EXPECT_FALSE(find_overlap(l.buffers, l.memory));
  // Plain plan order would give the loss x's bytes while x is still being written out.
  const MemoryPlan packed = plan_memory_greedy(plain, 16);
  EXPECT_LE(packed.arena_bytes, l.memory.arena_bytes);
}

TEST(Lower, APlanWithoutTransfersKeepsPlainPlanOrder) {
  const Graph g = testing::chain_training_graph(8);
  const GraphCosts costs = estimate_costs(g, testing::hand_device());
  const LoweredPlan l = lower(g, costs, checkpoint_all_schedule(g));
  const std::vector<BufferLife> plain = in_plan_order(l.simulation.buffers);
  ASSERT_EQ(l.buffers.size(), plain.size());
  for (std::size_t b = 0; b < plain.size(); ++b) EXPECT_EQ(l.buffers[b].release_rank, plain[b].release_rank);
  EXPECT_EQ(in_plan_order_until_transfers_end(l.plan, l.simulation).size(), plain.size());
}

TEST(Lower, HoldsTransfersOnlyWithinTheBudgetsRoom) {
  // Capuchin's paging plans of a chain at budgets from roomy to tight: the arena never
  // outgrows both the budget's room and plain plan order's arena, and where it holds,
  // no compute reuses bytes of a transfer the simulation had not ended.
  const Graph g = testing::chain_training_graph(12);
  const GraphCosts costs = estimate_costs(g, testing::device_with_transfers(0.5));
  const std::int64_t peak = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g)).peak_bytes;
  int paging = 0;
  for (std::int64_t less = 40; less <= 240; less += 40) {
    const SimulationOptions budget{.ram_budget_bytes = peak - less};
    const BaselineResult r = capuchin_for_budget(g, costs, budget);
    if (!r.found() || r.simulation->pageouts == 0) continue;
    ++paging;
    const LoweredPlan l = lower(g, costs, *r.schedule, {.simulation = budget});
    const MemoryPlan packed = plan_memory_greedy(in_plan_order(l.simulation.buffers), 16);
    EXPECT_LE(l.memory.arena_bytes, std::max(packed.arena_bytes, *budget.ram_budget_bytes - l.simulation.fixed_bytes));
    EXPECT_FALSE(find_overlap(l.buffers, l.memory));
    const bool held = [&] {
      for (std::size_t b = 0; b < l.buffers.size(); ++b)
        if (l.buffers[b].release_rank != l.buffers[b].released_by) return true;
      return false;
    }();
    if (held) expect_no_compute_reuses_bytes_in_transfer(l);
  }
  EXPECT_GT(paging, 0);
}

TEST(Lower, HoldsTransfersForTheLargestMarginThatFits) {
  // Capuchin's paging plans of a chain, over storage speeds and budgets: many fit a margin
  // strictly between 1 and the largest. Whatever margin is taken, its arena fits, no compute
  // reuses bytes of a transfer that margin's slower simulation had not ended, and the margin
  // 7% above it (the bisection's precision) does not fit.
  const Graph g = testing::chain_training_graph(12);
  int between = 0;
  for (const double latency_s : {0.5, 1.0, 2.0, 4.0}) {
    const GraphCosts costs = estimate_costs(g, testing::device_with_transfers(latency_s));
    const std::int64_t peak = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g)).peak_bytes;
    for (std::int64_t less = 40; less <= 240; less += 8) {
      const SimulationOptions budget{.ram_budget_bytes = peak - less};
      const BaselineResult r = capuchin_for_budget(g, costs, budget);
      if (!r.found() || r.simulation->pageouts == 0) continue;
      const LoweredPlan l = lower(g, costs, *r.schedule, {.simulation = budget});
      if (l.transfer_margin <= 1 || l.transfer_margin >= kMaxTransferMargin) continue;
      ++between;
      const std::int64_t room = std::max(*budget.ram_budget_bytes - l.simulation.fixed_bytes,
                                         plan_memory_greedy(in_plan_order(l.simulation.buffers), 16).arena_bytes);
      EXPECT_LE(l.memory.arena_bytes, room);
      const auto slower = [&](double factor) {
        GraphCosts c = costs;
        for (NodeCost& n : c.nodes) n.pageout_time_s *= factor, n.pagein_time_s *= factor;
        return simulate(g, c, l.plan);
      };
      LoweredPlan as_slow_as_held = l;
      as_slow_as_held.simulation = slower(l.transfer_margin);
      expect_no_compute_reuses_bytes_in_transfer(as_slow_as_held);
      const std::vector<BufferLife> more = in_plan_order_until_transfers_end(l.plan, slower(l.transfer_margin * 1.07));
      EXPECT_GT(plan_memory_greedy(more, 16).arena_bytes, room) << latency_s << " s, " << less << " B less";
    }
  }
  EXPECT_GT(between, 10);
}

// A schedule file given without --ram-budget (`poet plan --schedule s.json`): the transfer
// planner keeps the schedule's own peak. Unbounded, it moved this schedule's page-in early
// enough to undo its paging: an arena of 28,432 B, the peak of checkpoint-all, not 25,296 B.
TEST(Lower, WithoutABudgetKeepsTheSchedulesOwnPeak) {
  const Graph g = build_model_training_graph("lenet5", {.batch_size = 1}, BackwardMode::Autodiff);
  const GraphCosts costs = costs_for(g, builtin_platform("m4"));
  const Schedule paging = load_schedule(POET_TEST_DATA_DIR "/schedules/lenet5_m4_paging_95.json", g);
  const Plan plan = plan_from_schedule(paging, g);
  const std::int64_t own_peak = simulate(g, costs, plan).peak_bytes;
  ASSERT_GT(simulate(g, costs, plan_transfers(g, costs, plan, {}).plan).peak_bytes, own_peak);
  const LoweredPlan l = lower(g, costs, paging);
  EXPECT_EQ(l.transfers.moved_pageins, 1u);  // still hidden as far as the peak allows
  EXPECT_LE(l.simulation.peak_bytes, own_peak);
}

}  // namespace
}  // namespace poet
