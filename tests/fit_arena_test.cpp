#include "poet/lower/fit_arena.h"

#include <gtest/gtest.h>

#include <vector>

#include "poet/backward/backward.h"
#include "poet/budget/budget.h"
#include "poet/models/zoo.h"
#include "poet/strategy/strategy.h"

namespace poet {
namespace {

// vgg16_cifar at 70%: revolve's schedule peaks within the budget, but its static arena is
// 2.8% above its live peak, 5,807 B over the budget with the parameters.
struct Vgg16CifarAt70 {
  Graph g = build_model_training_graph("vgg16_cifar", {}, BackwardMode::Autodiff);
  GraphCosts costs = estimate_costs(g, builtin_platform("a72"));
  SimulationOptions options{.ram_budget_bytes = budget_scale(g, costs, {}).bytes_at(70)};
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
  const Vgg16CifarAt70 v;
  const std::int64_t budget = *v.options.ram_budget_bytes;
  const Schedule first = v.schedule("revolve", budget).value();
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
  const Vgg16CifarAt70 v;
  const Schedule first = v.schedule("revolve", *v.options.ram_budget_bytes).value();
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

  // The same schedule every time: the arena never shrinks, and the next budget is below the
  // schedule's own peak, so its lowering fails; the first plan stays.
  const ArenaFit same = lower_to_fit_arena(v.g, v.costs, first, {.simulation = v.options}, [&](std::int64_t) {
    ++calls;
    return std::optional<Schedule>(first);
  });
  EXPECT_GT(calls, 2);
  EXPECT_LE(calls, 1 + kMaxArenaReplans);
  EXPECT_FALSE(same.fits);
  EXPECT_EQ(same.schedule, first);
  EXPECT_EQ(same.planned_budget_bytes, *v.options.ram_budget_bytes);
}

TEST(FitArena, APlanThatFitsOrHasNoBudgetIsLoweredOnce) {
  const Vgg16CifarAt70 v;
  int calls = 0;
  const auto count = [&](std::int64_t) {
    ++calls;
    return std::optional<Schedule>();
  };
  const Schedule capuchin = v.schedule("capuchin", *v.options.ram_budget_bytes).value();
  const ArenaFit fit = lower_to_fit_arena(v.g, v.costs, capuchin, {.simulation = v.options}, count);
  EXPECT_LE(v.overrun(fit.lowered), 0);
  EXPECT_TRUE(fit.fits);
  const ArenaFit unbounded = lower_to_fit_arena(v.g, v.costs, v.schedule("revolve", *v.options.ram_budget_bytes).value(), {}, count);
  EXPECT_TRUE(unbounded.fits);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(fit.replans + unbounded.replans, 0);
}

}  // namespace
}  // namespace poet
