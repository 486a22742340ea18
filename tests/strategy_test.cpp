#include "poet/strategy/strategy.h"

#include <gtest/gtest.h>

#include "poet/backward/backward.h"
#include "poet/budget/budget.h"
#include "poet/cost/device.h"
#include "poet/util/error.h"
#include "work_limit.h"

namespace poet {
namespace {

struct StrategyCase {
  Graph g = build_model_training_graph("lenet5", {.batch_size = 4}, BackwardMode::Autodiff);
  GraphCosts costs = estimate_costs(g, builtin_platform("a72"));
  BudgetScale scale = budget_scale(g, costs, {});
  StrategyRequest at(double percent) const {
    StrategyRequest r;
    r.budget.ram_budget_bytes = scale.bytes_at(percent);
    r.max_nodes = 100;
    r.time_limit_s = testing::kHangGuardSeconds;
    return r;
  }
};

TEST(Strategy, OneListOfEveryMethodTheOracleFirstPoetLast) {
  const std::vector<std::string> all = strategy_names();
  ASSERT_EQ(all.size(), 11u);
  EXPECT_EQ(all.front(), "checkpoint_all");
  EXPECT_EQ(all.back(), "poet");
  EXPECT_EQ(strategy_names(StrategyKind::Oracle), std::vector<std::string>{"checkpoint_all"});
  EXPECT_EQ(strategy_names(StrategyKind::Baseline).size(), 6u);
  EXPECT_EQ(strategy_names(StrategyKind::Solver),
            (std::vector<std::string>{"checkmate", "poet_remat", "poet_paging", "poet"}));
  for (const std::string& name : all) EXPECT_TRUE(is_strategy(name)) << name;
  EXPECT_FALSE(is_strategy("magic"));
}

TEST(Strategy, EverySchedulingMethodFitsTheBudgetAndTheAdaptiveOnesDoNothingAtThePeak) {
  const StrategyCase c;
  const StrategyRequest peak = c.at(100);
  for (const std::string& name : strategy_names()) {
    const StrategyResult r = schedule_for_budget(name, c.g, c.costs, peak);
    EXPECT_FALSE(r.status.empty()) << name;
    if (!r.found()) {  // Chen's and revolve's fixed patterns, POFO's memory model: a reason
      EXPECT_FALSE(r.detail.empty()) << name;
      continue;
    }
    ASSERT_TRUE(r.simulation) << name;
    EXPECT_LE(r.simulation->peak_bytes, *peak.budget.ram_budget_bytes) << name;
  }
  // Checkpoint-all fits its own peak; the methods that weigh the budget then neither
  // recompute nor page.
  for (const char* name : {"checkpoint_all", "dtr", "capuchin", "checkmate", "poet_remat", "poet_paging", "poet"}) {
    const StrategyResult r = schedule_for_budget(name, c.g, c.costs, peak);
    ASSERT_TRUE(r.found()) << name << ": " << r.detail;
    EXPECT_EQ(r.simulation->recomputes + r.simulation->pageouts, 0u) << name;
  }
}

TEST(Strategy, BelowTheFloorEveryMethodSaysWhyWithoutThrowing) {
  const StrategyCase c;
  StrategyRequest tight = c.at(100);
  tight.budget.ram_budget_bytes = smallest_workable_budget(c.g, {}).bytes - 1;
  for (const std::string& name : strategy_names()) {
    const StrategyResult r = schedule_for_budget(name, c.g, c.costs, tight);
    EXPECT_FALSE(r.found()) << name;
    EXPECT_FALSE(r.detail.empty()) << name;
  }
}

TEST(Strategy, UnknownNamesAndMissingBudgetsAreInputErrors) {
  const StrategyCase c;
  try {
    schedule_for_budget("magic", c.g, c.costs, c.at(100));
    ADD_FAILURE() << "accepted 'magic'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint_all, chen_sqrt"), std::string::npos) << e.what();
  }
  EXPECT_THROW(schedule_for_budget("dtr", c.g, c.costs, {}), InputError);
  EXPECT_TRUE(schedule_for_budget("checkpoint_all", c.g, c.costs, {}).found());  // the oracle needs no budget
}

}  // namespace
}  // namespace poet
