// The evaluation's methods side by side (issue 5): every schedule is the simulator's to
// judge, and POET, when optimal, is never beaten on energy.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/simulate/simulator.h"
#include "poet/strategy/strategy.h"
#include "poet/sweep/sweep.h"
#include "poet/sweep/sweep_progress.h"
#include "poet/util/error.h"
#include "random_graphs.h"
#include "work_limit.h"

namespace poet {
namespace {

TEST(Sweep, EveryMethodValidatesOrSaysWhyAndOptimalPoetIsNeverBeaten) {
  std::mt19937 rng(11);
  SweepSettings settings;
  testing::limit_by_work(settings, 5000);  // CBC solves these graphs at the root (0 nodes)
  int optimal_poet = 0;
  for (int c = 0; c < 8; ++c) {
    const Graph g = testing::random_graph(rng, std::uniform_int_distribution<int>(6, 12)(rng));
    const GraphCosts costs = estimate_costs(g, builtin_platform("a72"));
    const auto ckpt = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g));
    const std::int64_t least = g.largest_footprint().bytes;
    for (const double fraction : {0.4, 0.8}) {
      const auto budget =
          least + static_cast<std::int64_t>(fraction * static_cast<double>(ckpt.peak_bytes - least));
      std::vector<SweepRow> rows;
      for (const auto& method : strategy_names()) rows.push_back(run_sweep_task(g, costs, {method, 0, budget, 0}, settings));
      const SweepRow* poet = nullptr;
      for (const SweepRow& r : rows) {
        const std::string where = "case " + std::to_string(c) + " " + r.task.method + " at " + std::to_string(budget);
        if (r.found) {
          EXPECT_LE(r.peak_bytes, budget) << where;
        } else {
          EXPECT_FALSE(r.reason.empty()) << where;
        }
        if (r.task.method == "poet") poet = &r;
      }
      ASSERT_NE(poet, nullptr);
      if (!poet->found || poet->status != "optimal") continue;
      ++optimal_poet;
      for (const SweepRow& r : rows) {
        if (!r.found) continue;
        EXPECT_LE(poet->energy_j, r.energy_j * (1 + 1e-9))
            << "case " << c << ": " << r.task.method << " beats optimal POET at " << budget << " B";
      }
    }
  }
  EXPECT_GE(optimal_poet, 8);  // the comparison above must actually happen
}

// Three methods at two budgets on a small random graph, limited by work, not time.
struct SmallSweep {
  Graph g;
  GraphCosts costs;
  std::vector<SweepTask> tasks;
  SweepSettings settings;
};

SmallSweep small_sweep() {
  std::mt19937 rng(3);
  SmallSweep s{testing::random_graph(rng, 10), {}, {}, {}};
  s.costs = estimate_costs(s.g, builtin_platform("m4"));
  const auto peak = simulate(s.g, s.costs, plan_from_schedule(checkpoint_all_schedule(s.g), s.g)).peak_bytes;
  for (const char* m : {"checkpoint_all", "dtr", "poet"})
    for (const double f : {1.0, 0.9}) s.tasks.push_back({m, 100 * f, static_cast<std::int64_t>(f * peak), 0});
  s.settings.progress = false;
  testing::limit_by_work(s.settings, 5000);  // the same row in the child and here
  return s;
}

TEST(Sweep, RunsTasksInProcessesAndKeepsTheirOrder) {
  const auto [g, costs, tasks, settings] = small_sweep();
  const auto rows = run_sweep(g, costs, tasks, settings);
  ASSERT_EQ(rows.size(), tasks.size());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    EXPECT_EQ(rows[k].task.method, tasks[k].method);
    EXPECT_EQ(rows[k].task.budget_bytes, tasks[k].budget_bytes);
    // The same task run here gives the same row.
    const SweepRow here = run_sweep_task(g, costs, tasks[k], settings);
    EXPECT_EQ(rows[k].found, here.found) << k;
    EXPECT_DOUBLE_EQ(rows[k].energy_j, here.energy_j) << k;
  }
  EXPECT_TRUE(rows[0].found);  // checkpoint-all at its own peak
}

// An interrupted sweep's rows (sweep_progress.h) are kept, not run again.
TEST(Sweep, AResumedSweepRunsOnlyTheTasksNotYetFinished) {
  const auto [g, costs, tasks, settings] = small_sweep();
  SweepRowsSoFar saved(tasks.size());
  for (std::size_t k = 0; k < 3; ++k) {  // each marked so that a rerun would show
    saved[k].emplace();
    saved[k]->task = tasks[k];
    saved[k]->status = "saved";
  }
  int calls = 0;
  std::size_t last_done = 0;
  const std::vector<SweepRow> rows = run_sweep(g, costs, tasks, settings, saved, [&](const SweepRowsSoFar& so_far) {
    ++calls;
    last_done = rows_finished(so_far);
  });
  EXPECT_EQ(calls, 3) << "one call per task run";
  EXPECT_EQ(last_done, tasks.size());
  ASSERT_EQ(rows.size(), tasks.size());
  for (std::size_t k = 0; k < tasks.size(); ++k) {
    EXPECT_EQ(rows[k].task.method, tasks[k].method) << k;
    EXPECT_EQ(rows[k].status == "saved", k < 3) << k << ": " << rows[k].status;
  }
}

TEST(Sweep, RowsRoundTripThroughJsonAndCsvQuotesReasons) {
  SweepRow r;
  r.task = {"capuchin", 40, 1234, 1.5};
  r.status = "no schedule";
  r.reason = "too \"tight\", here";
  const SweepRow back = sweep_row_from_json(sweep_row_to_json(r));
  EXPECT_EQ(back.task.method, "capuchin");
  EXPECT_EQ(back.task.budget_bytes, 1234);
  EXPECT_EQ(back.reason, r.reason);
  const std::string csv = sweep_csv({r});
  EXPECT_NE(csv.find("\"too \"\"tight\"\", here\""), std::string::npos) << csv;
}

TEST(Sweep, UnknownMethodIsNamed) {
  EXPECT_EQ(parse_sweep_methods("all"), strategy_names());
  EXPECT_EQ(parse_sweep_methods("poet,dtr"), (std::vector<std::string>{"poet", "dtr"}));
  try {
    parse_sweep_methods("poet,chekmate");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'chekmate'"), std::string::npos);
  }
}

TEST(Sweep, FiguresDrawOneLinePerMethodWithASchedule) {
  std::vector<SweepRow> rows;
  for (const char* m : {"capuchin", "poet", "dtr"})
    for (const double percent : {50.0, 100.0}) {
      SweepRow r;
      r.task = {m, percent, 0, 0};
      r.found = std::string(m) != "dtr";
      r.energy_j = percent == 100 ? 10 : 10.5;
      rows.push_back(r);
    }
  const std::string svg = energy_overhead_svg(rows, 10, "test");
  EXPECT_NE(svg.find("data-name=\"capuchin\""), std::string::npos);
  EXPECT_NE(svg.find("data-name=\"poet\""), std::string::npos);
  EXPECT_EQ(svg.find("data-name=\"dtr\""), std::string::npos);  // no schedule at any budget: no line
  EXPECT_NE(poet_vs_pofo_table(rows).find("| 50% |"), std::string::npos);
}

TEST(Sweep, OverheadTableGivesPoetsProvenGapBesideItsPoint) {
  std::vector<SweepRow> rows;
  for (const char* m : {"capuchin", "poet", "dtr"}) {
    SweepRow r;
    r.task = {m, 50, 0, 0};
    r.found = std::string(m) != "dtr";
    r.energy_j = 10.5;
    r.gap = 0.0123;  // a baseline's gap means nothing and is not shown
    rows.push_back(r);
  }
  EXPECT_EQ(overhead_table(rows, {"capuchin", "poet", "dtr"}, 10),
            "| budget | capuchin | poet | dtr |\n| --- | --- | --- | --- |\n| 50% | 5.00% | 5.00% (gap 1.23%) | - |\n");
  // A task that failed is no "no schedule": its reason is in sweep.csv.
  rows[2].status = "error";
  EXPECT_NE(overhead_table(rows, {"capuchin", "poet", "dtr"}, 10).find("(gap 1.23%) | error |\n"), std::string::npos);
}

}  // namespace
}  // namespace poet
