#include "poet/lower/fit_arena.h"

#include <gtest/gtest.h>

#include <vector>

#include "poet/backward/backward.h"
#include "poet/budget/budget.h"
#include "poet/models/zoo.h"
#include "poet/strategy/strategy.h"

namespace poet {
namespace {

// lenet5 at batch 2 and 100%: checkpoint-all peaks at the budget, but the arena's sizes are
// aligned to 16 B, which puts it 8 B over the budget with the parameters.
struct Lenet5At100 {
  Graph g = build_model_training_graph("lenet5", {.batch_size = 2}, BackwardMode::Autodiff);
  GraphCosts costs = estimate_costs(g, builtin_platform("a72"));
  SimulationOptions options{.ram_budget_bytes = budget_scale(g, costs, {}).bytes_at(100)};
  std::optional<Schedule> schedule(const std::string& strategy, std::int64_t budget) const {
    SimulationOptions at = options;
    at.ram_budget_bytes = budget;
    return schedule_for_budget(strategy, g, costs, {.budget = at}).schedule;
  }
  std::int64_t overrun(const LoweredPlan& p) const {
    return p.memory.arena_bytes + p.simulation.fixed_bytes - *options.ram_budget_bytes;
  }
};

TEST(FitArena, PlansAgainBelowTheBudgetUntilTheArenaAndTheFixedMemoryFit) {
  const Lenet5At100 v;
  const std::int64_t budget = *v.options.ram_budget_bytes;
  const Schedule first = v.schedule("checkpoint_all", budget).value();
  const std::int64_t over = v.overrun(lower(v.g, v.costs, first, {.simulation = v.options}));
  ASSERT_GT(over, 0) << "the instance no longer overruns; find another for this test";

  std::vector<std::int64_t> asked;
  const ArenaFit fit = lower_to_fit_arena(v.g, v.costs, first, {.simulation = v.options}, [&](std::int64_t at) {
    asked.push_back(at);
    return v.schedule("capuchin", at);
  });
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked.front(), budget - over);  // the first step is the overrun
  for (std::size_t i = 1; i < asked.size(); ++i) EXPECT_LT(asked[i], asked[i - 1]);
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.replans, static_cast<int>(asked.size()));
  EXPECT_EQ(fit.planned_budget_bytes, asked.back());
  EXPECT_LE(v.overrun(fit.lowered), 0);
  EXPECT_LE(fit.lowered.simulation.peak_bytes, fit.planned_budget_bytes);  // lowered under the lower budget
  EXPECT_EQ(fit.schedule, v.schedule("capuchin", asked.back()));
  EXPECT_GT(fit.first_energy_j, 0);
  EXPECT_NE(replan_summary(fit, budget).find("made again at a budget of"), std::string::npos);
}

TEST(FitArena, KeepsTheFirstPlanAndSaysItDoesNotFitWhenNoReplanFits) {
  const Lenet5At100 v;
  const Schedule first = v.schedule("checkpoint_all", *v.options.ram_budget_bytes).value();
  int calls = 0;
  const ArenaFit none = lower_to_fit_arena(v.g, v.costs, first, {.simulation = v.options}, [&](std::int64_t) {
    ++calls;
    return std::optional<Schedule>();
  });
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(none.fits);
  EXPECT_EQ(none.replans, 1);
  EXPECT_EQ(none.schedule, first);
  EXPECT_EQ(none.planned_budget_bytes, *v.options.ram_budget_bytes);
  EXPECT_GT(v.overrun(none.lowered), 0);
  EXPECT_EQ(replan_summary(none, *v.options.ram_budget_bytes), "");

  // The same schedule again: checkpoint-all peaks above any lower budget, so its lowering
  // there fails, and the first plan stays.
  const ArenaFit same = lower_to_fit_arena(v.g, v.costs, first, {.simulation = v.options}, [&](std::int64_t) {
    ++calls;
    return std::optional<Schedule>(first);
  });
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(same.fits);
  EXPECT_EQ(same.schedule, first);
  EXPECT_EQ(same.planned_budget_bytes, *v.options.ram_budget_bytes);
}

TEST(FitArena, APlanThatFitsOrHasNoBudgetIsLoweredOnce) {
  const Lenet5At100 v;
  int calls = 0;
  const auto count = [&](std::int64_t) {
    ++calls;
    return std::optional<Schedule>();
  };
  const Schedule all = v.schedule("checkpoint_all", *v.options.ram_budget_bytes).value();
  SimulationOptions with_padding = v.options;  // 8 B were missing
  *with_padding.ram_budget_bytes += 16;
  const ArenaFit fit = lower_to_fit_arena(v.g, v.costs, all, {.simulation = with_padding}, count);
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.lowered.memory.arena_bytes + fit.lowered.simulation.fixed_bytes, *with_padding.ram_budget_bytes - 8);
  const ArenaFit unbounded = lower_to_fit_arena(v.g, v.costs, all, {}, count);
  EXPECT_TRUE(unbounded.fits);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(fit.replans + unbounded.replans, 0);
}

}  // namespace
}  // namespace poet
