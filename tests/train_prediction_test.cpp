// The train module: plans for a strategy and budget, timed steps of several plans side by
// side, and the predicted-against-measured report.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "executor_harness.h"
#include "poet/plan/plan.h"
#include "poet/train/prediction_report.h"
#include "poet/train/training_plan.h"
#include "poet/util/error.h"

namespace poet::testing {
namespace {

// Parameters plus `percent` of checkpoint-all's activation peak, as --ram-budget 70% means.
std::int64_t budget_at(const Graph& g, const GraphCosts& costs, double percent) {
  const SimulationResult all = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g), {});
  return all.fixed_bytes + static_cast<std::int64_t>(percent / 100 * static_cast<double>(all.peak_activation_bytes));
}

std::int64_t paged_out_bytes(const Graph& g, const Plan& p) {
  std::int64_t bytes = 0;
  for (const Instruction& i : p.instructions)
    if (i.kind == InstrKind::PageOut) bytes += g.node(i.node).bytes;
  return bytes;
}

TEST(TrainingPlan, EveryStrategyAtTheUnconstrainedPeakPlansWithoutRecomputingOrPaging) {
  const Graph g = training_graph("lenet5", 2);
  const GraphCosts costs = test_costs(g);
  // The arena's sizes are aligned: a device holding checkpoint-all's whole arena needs its
  // padding too (8 B here), or the plan is made again below the budget.
  const LoweredPlan all = lower(g, costs, checkpoint_all_schedule(g));
  const std::int64_t unconstrained = all.simulation.fixed_bytes + all.memory.arena_bytes;
  EXPECT_GT(unconstrained, budget_at(g, costs, 100));
  for (const std::string strategy : {"checkpoint_all", "poet", "dtr", "capuchin"}) {
    const train::TrainingPlan p = train::plan_training(g, costs, {.strategy = strategy, .budget_bytes = unconstrained});
    EXPECT_EQ(p.note, "") << strategy;
    EXPECT_EQ(p.lowered.simulation.recomputes, 0) << strategy;
    EXPECT_EQ(p.lowered.simulation.pageouts, 0) << strategy;
    EXPECT_LE(p.lowered.simulation.peak_bytes, p.budget_bytes) << strategy;
  }
}

TEST(TrainingPlan, BelowTheLargestFootprintNamesTheSmallestWorkableBudget) {
  const Graph g = training_graph("lenet5", 2);
  const GraphCosts costs = test_costs(g);
  try {
    train::plan_training(g, costs, {.strategy = "poet", .budget_bytes = budget_at(g, costs, 50)});
    FAIL() << "50% of lenet5 cannot be workable";
  } catch (const train::NoSchedule& e) {
    EXPECT_FALSE(e.another_strategy_may_help);
    // The max-pool gradient dX from dY and the indices: computed over nothing in place.
    EXPECT_NE(std::string(e.what()).find("'drelu1<-pool1' needs with its inputs; give a budget of 86.9% or more"),
              std::string::npos)
        << e.what();
  }
}

TEST(TrainingPlan, StrategyThatCannotFitSaysWhyAndUnknownOnesAreRefused) {
  const Graph g = training_graph("lenet5", 2);
  const GraphCosts costs = test_costs(g);
  EXPECT_THROW(train::plan_training(g, costs, {.strategy = "checkpoint_all", .budget_bytes = budget_at(g, costs, 97)}),
               train::NoSchedule);
  EXPECT_THROW(train::plan_training(g, costs, {.strategy = "magic", .budget_bytes = budget_at(g, costs, 100)}),
               InputError);
}

TEST(StepTiming, PlansRunSideBySideAndPageTheBytesTheirPlansSay) {
  const Graph g = training_graph("resnet18_cifar", 2);
  const GraphCosts costs = test_costs(g);
  const LoweredPlan all = executable(g, checkpoint_all_schedule(g));
  // On a72 paging is cheap beside compute, so poet pages at 60%.
  const train::TrainingPlan paging = train::plan_training(
      g, costs, {.strategy = "poet", .budget_bytes = budget_at(g, costs, 60), .time_limit_s = 5});
  ASSERT_GT(paging.lowered.simulation.pageouts, 0);
  train::StepTimingOptions o;
  o.warmup_steps = 1;
  o.steps = 3;
  o.page_dir = ::testing::TempDir();
  int rounds = 0;
  const std::vector<const LoweredPlan*> plans = {&all, &paging.lowered};
  o.time_nodes_alongside = true;
  const train::SideBySideTiming timing = train::time_training_steps(g, plans, o, [&](int done, int total) {
    EXPECT_EQ(total, 3);
    rounds = done;
  });
  const std::vector<train::StepTiming>& t = timing.plans;
  ASSERT_EQ(timing.node_seconds.size(), g.size());
  for (double s : timing.node_seconds) EXPECT_GT(s, 0);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(rounds, 3);
  for (const train::StepTiming& s : t) {
    EXPECT_GT(s.median_s, 0);
    EXPECT_EQ(s.steps, 3);
  }
  EXPECT_EQ(t[0].bytes_paged_out, 0u);
  EXPECT_EQ(t[1].bytes_paged_out, static_cast<std::size_t>(paged_out_bytes(g, paging.lowered.plan)));
  EXPECT_EQ(t[1].bytes_paged_in, t[1].bytes_paged_out);  // everything paged out comes back
  EXPECT_EQ(t[0].storage_busy_s, 0);
  EXPECT_GT(t[1].storage_busy_s, 0);
  EXPECT_LE(t[1].peak_live_bytes, paging.lowered.memory.arena_bytes);
}

TEST(Prediction, RowsAreBudgetMajorAndThoseWithoutAPlanSayWhy) {
  const Graph g = training_graph("lenet5", 2);
  const GraphCosts costs = test_costs(g);
  train::PredictionRequest r;
  r.strategies = {"checkpoint_all", "poet"};
  r.budgets = {{"100%", budget_at(g, costs, 100)}, {"97%", budget_at(g, costs, 97)}};
  r.timing.warmup_steps = 0;
  r.timing.steps = 2;
  r.timing.page_dir = ::testing::TempDir();
  r.update_s = 1e-3;  // the profile's optimizer update, the same in every plan's step
  const auto rows = train::predict_and_measure(g, costs, r);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].strategy + " " + rows[0].budget, "checkpoint_all 100%");
  EXPECT_EQ(rows[3].strategy + " " + rows[3].budget, "poet 97%");
  EXPECT_TRUE(rows[0].ran && rows[1].ran && rows[3].ran);
  EXPECT_FALSE(rows[2].ran);  // checkpoint-all does not fit 97%
  EXPECT_NE(rows[2].note.find("no plan: checkpoint_all found no schedule"), std::string::npos) << rows[2].note;
  const SimulationResult all = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g), {});
  EXPECT_DOUBLE_EQ(rows[0].predicted_s, all.makespan_s + 1e-3);  // the simulator's figure, not the method's
  EXPECT_GE(rows[3].recomputes + rows[3].pageouts, 1);

  // Node times taken alongside the steps replace the FLOP model's in the prediction.
  r.timing.time_nodes_alongside = true;
  const auto alongside = train::predict_and_measure(g, costs, r);
  EXPECT_GT(alongside[0].predicted_s, 0);
  EXPECT_NE(alongside[0].predicted_s, all.makespan_s);
}

train::PredictionRow row(const std::string& strategy, double predicted, double measured) {
  train::PredictionRow r;
  r.model = "m";
  r.strategy = strategy;
  r.budget = "70%";
  r.budget_bytes = 1000;
  r.ran = true;
  r.predicted_s = predicted;
  r.measured_s = measured;
  r.steps = 5;
  r.cpu_share = 0.95;
  return r;
}

TEST(PredictionReport, MedianAbsoluteErrorIgnoresRowsThatDidNotRun) {
  train::PredictionRow none = row("dtr", 1, 9);
  none.ran = false;
  const std::vector<train::PredictionRow> rows = {row("poet", 1, 1.1), row("poet", 2, 1.4), row("dtr", 1, 0.8), none};
  EXPECT_NEAR(train::median_absolute_error(rows), 0.2, 1e-12);  // |errors| 0.1, 0.3, 0.2
  EXPECT_EQ(train::median_absolute_error({none}), 0);
  EXPECT_EQ(train::prediction_summary(rows),
            "median |error| 20.0% over 3 plans that ran; the steps had 95% of a CPU");
  std::vector<train::PredictionRow> busy = rows;
  for (train::PredictionRow& r : busy) r.cpu_share = 0.5;
  EXPECT_NE(train::prediction_summary(busy).find("other processes were using this CPU"), std::string::npos);
  // Storage busy far longer than predicted is named, with the plan where it was worst.
  std::vector<train::PredictionRow> paging = rows;
  paging[0].predicted_storage_s = 0.004, paging[0].measured_storage_s = 0.005;
  EXPECT_EQ(train::prediction_summary(paging), train::prediction_summary(rows));
  paging[1].predicted_storage_s = 0.004, paging[1].measured_storage_s = 0.012;
  paging[3].predicted_storage_s = 0.004, paging[3].measured_storage_s = 0.040;  // did not run
  EXPECT_NE(train::prediction_summary(paging).find("storage was busy 3.0x as long as predicted with poet at 70% "
                                                   "(12 ms a step against 4 ms)"),
            std::string::npos)
      << train::prediction_summary(paging);
}

TEST(PredictionReport, TableJsonAndScatterCarryEveryRow) {
  train::PredictionRow none = row("dtr", 0, 0);
  none.ran = false;
  none.note = "no plan: dtr <found> nothing";
  train::PredictionRow paging = row("poet", 0.010, 0.011);
  paging.predicted_stall_s = 0.001;
  paging.measured_stall_s = 0.002;
  paging.predicted_storage_s = 0.003;
  paging.measured_storage_s = 0.009;
  const std::vector<train::PredictionRow> rows = {paging, none};
  const std::string table = train::prediction_table_markdown(rows);
  EXPECT_NE(table.find(
                "| m | poet | 70% (1000 B) | 0 | 0 | 0 B | 10 ms | 11 ms, 0 s (5 steps) | 1 ms / 2 ms | 3 ms / 9 ms | 95% | +10.0% |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("no plan: dtr <found> nothing"), std::string::npos);
  const nlohmann::json j = train::prediction_rows_json(rows);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_NEAR(j[0]["relative_error"].get<double>(), 0.1, 1e-9);
  EXPECT_DOUBLE_EQ(j[0]["predicted_stall_s"].get<double>(), 0.001);
  EXPECT_DOUBLE_EQ(j[0]["measured_stall_s"].get<double>(), 0.002);
  EXPECT_DOUBLE_EQ(j[0]["predicted_storage_s"].get<double>(), 0.003);
  EXPECT_DOUBLE_EQ(j[0]["measured_storage_s"].get<double>(), 0.009);
  EXPECT_FALSE(j[1].contains("predicted_step_s"));
  const std::string svg = train::prediction_scatter_svg(rows, "a <title>");
  EXPECT_NE(svg.find("a &lt;title&gt;"), std::string::npos);
  EXPECT_NE(svg.find("data-name=\"poet\""), std::string::npos);
  EXPECT_EQ(svg.find("data-name=\"dtr\""), std::string::npos);  // no point to draw
  EXPECT_NE(svg.find("measured = predicted"), std::string::npos);
}

}  // namespace
}  // namespace poet::testing
