// Griewank & Walther's binomial checkpointing: its counts against the closed forms, a
// 4-node chain by hand, and its refusal of graphs that are not chains.
#include "poet/baselines/revolve.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "poet/backward/backward.h"
#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "hand_graph.h"
#include "simulated.h"

namespace poet {
namespace {

using K = RevolveAction::Kind;

std::vector<int> advances_per_step(const std::vector<RevolveAction>& actions, int steps) {
  std::vector<int> count(steps + 1, 0);
  for (const auto& a : actions)
    if (a.kind == K::Advance) ++count[a.step];
  return count;
}

TEST(BaselineRevolve, BetaIsTheBinomialCoefficient) {
  EXPECT_EQ(revolve_beta(1, 0), 1);
  EXPECT_EQ(revolve_beta(1, 3), 4);  // one slot: r + 1 steps
  EXPECT_EQ(revolve_beta(2, 2), 6);
  EXPECT_EQ(revolve_beta(3, 2), 10);
  EXPECT_EQ(revolve_beta(4, 4), 70);
  EXPECT_EQ(revolve_beta(10, 10), 184756);
  EXPECT_EQ(revolve_beta(2, -1), 0);
}

TEST(BaselineRevolve, ClosedFormForwardStepsBySmallCases) {
  EXPECT_EQ(revolve_min_forward_steps(1, 1), 0);
  EXPECT_EQ(revolve_min_forward_steps(2, 1), 1);  // advance x1 once, turn 2, turn 1
  EXPECT_EQ(revolve_min_forward_steps(3, 1), 3);  // 2 + 1
  EXPECT_EQ(revolve_min_forward_steps(4, 1), 6);  // 3 + 2 + 1
  EXPECT_EQ(revolve_min_forward_steps(3, 2), 2);  // store x1: every step advanced once
  EXPECT_EQ(revolve_min_forward_steps(6, 2), 8);  // r = 2: 2 x 6 - beta(3, 1) = 12 - 4
}

TEST(BaselineRevolve, DynamicProgramMatchesTheClosedFormAndItsOwnActions) {
  for (int steps = 1; steps <= 40; ++steps) {
    const BinomialReversal table(steps, 6);
    for (int slots = 1; slots <= 6; ++slots) {
      const auto actions = table.actions(slots);
      const auto counts = advances_per_step(actions, steps);
      const std::int64_t advances = std::count_if(actions.begin(), actions.end(),
                                                  [](const RevolveAction& a) { return a.kind == K::Advance; });
      EXPECT_EQ(table.forward_steps(slots), revolve_min_forward_steps(steps, slots)) << steps << " " << slots;
      EXPECT_EQ(advances, table.forward_steps(slots)) << steps << " " << slots;
      // Turns reverse the steps in order, each with its input reachable, and stores stay
      // within the slots (x0's own slot is not stored).
      int expected_turn = steps, stored = 0, max_stored = 0, current = 0;
      bool restore = false;  // after a turn, work restarts from the latest checkpoint
      std::vector<bool> held(steps + 1, false);
      held[0] = true;
      for (const auto& a : actions) {
        if (restore && (a.kind == K::Advance || a.kind == K::Turn)) {
          while (current > 0 && !held[current]) --current;
          restore = false;
        }
        if (a.kind == K::Advance) {
          EXPECT_EQ(a.step, current + 1);
          current = a.step;
        } else if (a.kind == K::Store) {
          held[a.step] = true;
          max_stored = std::max(max_stored, ++stored);
        } else if (a.kind == K::Release) {
          held[a.step] = false;
          --stored;
        } else {
          EXPECT_EQ(a.step, expected_turn--);
          EXPECT_EQ(current, a.step - 1) << "turn " << a.step << " without its input";
          current = a.step - 1;
          restore = true;
        }
      }
      EXPECT_EQ(expected_turn, 0);
      EXPECT_LE(max_stored, slots - 1);
    }
  }
}

TEST(BaselineRevolve, AtBetaEveryStepIsAdvancedAtMostRTimes) {
  for (int slots = 1; slots <= 4; ++slots)
    for (int r = 1; r <= 4; ++r) {
      const auto steps = static_cast<int>(revolve_beta(slots, r));
      const auto counts = advances_per_step(BinomialReversal(steps, slots).actions(slots), steps);
      EXPECT_LE(*std::max_element(counts.begin(), counts.end()), r) << "slots " << slots << " r " << r;
    }
}

TEST(BaselineRevolve, FourNodeChainByHand) {
  const Graph g = testing::chain_training_graph(4);  // x0 .. x3 (loss); gradients at stages 4, 5, 6
  // One slot (x0's): gradient of step 3 reads x2, x3 from the forward; step 2 needs x1 and
  // x2 again: advance x1 from x0, recompute x2 in the turn; step 1 reads x0 and x1, still there.
  const BaselineResult one = revolve_schedule(g, 1);
  ASSERT_TRUE(one.found()) << one.reason;
  EXPECT_EQ(one.schedule->R.row(4), (SparseRow{4}));
  EXPECT_EQ(one.schedule->R.row(5), (SparseRow{1, 2, 5}));
  EXPECT_EQ(one.schedule->R.row(6), (SparseRow{6}));
  EXPECT_EQ(testing::simulate_on_hand_device(g, *one.schedule).recomputes, 2u);
  // Two slots: x1 is stored in the forward sweep, nothing is recomputed.
  const BaselineResult two = revolve_schedule(g, 2);
  ASSERT_TRUE(two.found()) << two.reason;
  EXPECT_EQ(testing::simulate_on_hand_device(g, *two.schedule).recomputes, 0u);
  EXPECT_THROW(revolve_schedule(g, 0), InputError);
}

TEST(BaselineRevolve, SchedulesValidateAndBeatCheckpointAllOnALongChain) {
  const Graph g = testing::chain_training_graph(40);
  const SimulationResult all = testing::simulate_on_hand_device(g, checkpoint_all_schedule(g));
  std::int64_t previous_recomputes = INT64_MAX;
  for (int slots = 1; slots <= 10; ++slots) {
    const BaselineResult r = revolve_schedule(g, slots);
    ASSERT_TRUE(r.found()) << r.reason;
    const SimulationResult sim = testing::simulate_on_hand_device(g, *r.schedule);
    EXPECT_LT(sim.peak_activation_bytes, all.peak_activation_bytes) << slots;
    const auto recomputes = static_cast<std::int64_t>(sim.recomputes);
    EXPECT_LE(recomputes, previous_recomputes) << slots;
    // Advances after the first sweep, plus at most one turn evaluation per step.
    const std::int64_t extra_advances = revolve_min_forward_steps(39, slots) - 38;
    EXPECT_GE(recomputes, extra_advances) << slots;
    EXPECT_LE(recomputes, extra_advances + 39) << slots;
    previous_recomputes = recomputes;
  }
}

TEST(BaselineRevolve, AutodiffChainsWithGradientOnlyStagesValidate) {
  // LeNet's flatten and the MLP's activations have backward nodes that read no forward
  // tensor, and some steps have no backward node that reads their input.
  for (const char* model : {"linear", "lenet5"}) {
    const Graph g = build_model_training_graph(model, {}, BackwardMode::Autodiff);
    const SimulationResult all = testing::simulate_on_hand_device(g, checkpoint_all_schedule(g));
    std::int64_t lowest_peak = INT64_MAX;
    for (int slots = 1; slots <= 6; ++slots) {
      const BaselineResult r = revolve_schedule(g, slots);
      ASSERT_TRUE(r.found()) << model << ": " << r.reason;
      SimulationResult sim;
      EXPECT_NO_THROW(sim = testing::simulate_on_hand_device(g, *r.schedule)) << model << " slots " << slots;
      lowest_peak = std::min(lowest_peak, sim.peak_activation_bytes);
    }
    // LeNet's peak is relu1's backward (its dY, its dX and the mask of relu1's output, with
    // the input that conv1's weight gradient reads next), which no recomputation lowers,
    // and some number of slots reaches it; the MLP's drops.
    if (std::string(model) == "linear")
      EXPECT_LT(lowest_peak, all.peak_activation_bytes);
    else
      EXPECT_EQ(lowest_peak, all.peak_activation_bytes);
  }
}

TEST(BaselineRevolve, RefusesAGraphThatIsNotAChain) {
  const Graph g = build_model_training_graph("resnet18_cifar", {}, BackwardMode::Autodiff);
  const BaselineResult r = revolve_schedule(g, 3);
  EXPECT_FALSE(r.found());
  EXPECT_NE(r.reason.find("chains only"), std::string::npos) << r.reason;
  const auto costs = estimate_costs(g, testing::hand_device());
  const BaselineResult budgeted = revolve_for_budget(g, costs, {});
  EXPECT_FALSE(budgeted.found());
  EXPECT_NE(budgeted.reason.find("chains only"), std::string::npos) << budgeted.reason;
}

TEST(BaselineRevolve, ForBudgetPicksTheCheapestScheduleThatFits) {
  const Graph g = testing::chain_training_graph(30);
  const auto costs = estimate_costs(g, testing::hand_device());
  const std::int64_t all_peak = testing::simulate_on_hand_device(g, checkpoint_all_schedule(g)).peak_bytes;
  const BaselineResult roomy = revolve_for_budget(g, costs, {.ram_budget_bytes = all_peak});
  ASSERT_TRUE(roomy.found()) << roomy.reason;
  EXPECT_EQ(roomy.simulation->recomputes, 0u);
  const std::int64_t one_slot_peak = testing::simulate_on_hand_device(g, *revolve_schedule(g, 1).schedule).peak_bytes;
  const BaselineResult tight = revolve_for_budget(g, costs, {.ram_budget_bytes = one_slot_peak});
  ASSERT_TRUE(tight.found()) << tight.reason;
  EXPECT_NO_THROW(simulate(g, costs, plan_from_schedule(*tight.schedule, g), {.ram_budget_bytes = one_slot_peak}));
  const BaselineResult none = revolve_for_budget(g, costs, {.ram_budget_bytes = 159});
  EXPECT_FALSE(none.found());
  EXPECT_FALSE(none.reason.empty());
}

}  // namespace
}  // namespace poet
