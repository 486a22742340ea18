// An interrupted sweep continues where it stopped: the rows it saved are kept, not run
// again, and a progress file of another sweep is refused rather than mixed in.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/simulate/simulator.h"
#include "poet/sweep/sweep_progress.h"
#include "poet/util/error.h"
#include "random_graphs.h"
#include "work_limit.h"

namespace poet {
namespace {

const SweepIdentity kIdentity{"g, 10 nodes, activation peak 1000 B", "m4", 60, 1e-4};

std::vector<SweepTask> some_tasks() {
  std::vector<SweepTask> tasks;
  for (const char* m : {"checkpoint_all", "dtr", "poet"})
    for (const double percent : {100.0, 90.0}) tasks.push_back({m, percent, static_cast<std::int64_t>(10 * percent), 0});
  return tasks;
}

std::string refusal(const nlohmann::json& progress, const SweepIdentity& identity) {
  try {
    sweep_rows_to_resume(progress, "p.json", identity, some_tasks());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SweepProgress, AResumedSweepRunsOnlyTheTasksItsProgressLacks) {
  std::mt19937 rng(3);
  const Graph g = testing::random_graph(rng, 10);
  const GraphCosts costs = estimate_costs(g, builtin_platform("m4"));
  const auto peak = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g)).peak_bytes;
  std::vector<SweepTask> tasks;
  for (const char* m : {"checkpoint_all", "dtr", "poet"})
    for (const double f : {1.0, 0.9}) tasks.push_back({m, 100 * f, static_cast<std::int64_t>(f * peak), 0});
  SweepSettings settings;
  settings.progress = false;
  testing::limit_by_work(settings, 5000);

  // Saved by an interrupted run: the first three tasks, each marked so a rerun would show.
  SweepRowsSoFar saved(tasks.size());
  for (std::size_t k = 0; k < 3; ++k) {
    saved[k].emplace();
    saved[k]->task = tasks[k];
    saved[k]->status = "saved";
  }
  const SweepRowsSoFar resumed =
      sweep_rows_to_resume(sweep_progress_to_json(kIdentity, saved), "p.json", kIdentity, tasks);
  ASSERT_EQ(resumed.size(), tasks.size());
  for (std::size_t k = 0; k < tasks.size(); ++k) EXPECT_EQ(resumed[k].has_value(), k < 3) << k;

  int calls = 0;
  std::size_t last_done = 0;
  const std::vector<SweepRow> rows = run_sweep(g, costs, tasks, settings, resumed, [&](const SweepRowsSoFar& so_far) {
    ++calls;
    last_done = static_cast<std::size_t>(std::ranges::count_if(so_far, [](const auto& r) { return r.has_value(); }));
  });
  EXPECT_EQ(calls, 3) << "one call per task run";
  EXPECT_EQ(last_done, tasks.size());
  ASSERT_EQ(rows.size(), tasks.size());
  for (std::size_t k = 0; k < tasks.size(); ++k) {
    EXPECT_EQ(rows[k].task.method, tasks[k].method) << k;
    EXPECT_EQ(rows[k].status == "saved", k < 3) << k << ": " << rows[k].status;
  }
}

TEST(SweepProgress, RowsOfTasksThisSweepDoesNotHaveAreLeftOut) {
  SweepRowsSoFar saved(1);
  saved[0].emplace();
  saved[0]->task = {"capuchin", 50, 500, 0};  // not among some_tasks()
  const SweepRowsSoFar resumed =
      sweep_rows_to_resume(sweep_progress_to_json(kIdentity, saved), "p.json", kIdentity, some_tasks());
  EXPECT_TRUE(std::ranges::none_of(resumed, [](const auto& r) { return r.has_value(); }));
}

TEST(SweepProgress, AnotherSweepsProgressIsRefusedByWhatDiffers) {
  const nlohmann::json progress = sweep_progress_to_json(kIdentity, SweepRowsSoFar(2));
  EXPECT_EQ(refusal(progress, kIdentity), "");
  SweepIdentity other = kIdentity;
  other.time_limit_s = 30;
  EXPECT_NE(refusal(progress, other).find("made with --time-limit 60, not 30"), std::string::npos);
  other = kIdentity;
  other.platform = "a72";
  EXPECT_NE(refusal(progress, other).find("made with --platform m4, not a72"), std::string::npos);
  other = kIdentity;
  other.graph = "g, 10 nodes, activation peak 2000 B";
  EXPECT_NE(refusal(progress, other).find("activation peak 1000 B, not g, 10 nodes, activation peak 2000 B"),
            std::string::npos);
  other = kIdentity;
  other.relative_gap = 0.01;
  EXPECT_NE(refusal(progress, other).find("--gap"), std::string::npos);

  EXPECT_NE(refusal(nlohmann::json::array(), kIdentity).find("not a sweep's progress file"), std::string::npos);
  nlohmann::json damaged = progress;
  damaged["rows"] = nlohmann::json::array({{{"method", "dtr"}}});
  EXPECT_NE(refusal(damaged, kIdentity).find("a row is damaged"), std::string::npos);
  damaged = progress;
  damaged.erase("platform");
  EXPECT_NE(refusal(damaged, kIdentity).find("damaged"), std::string::npos);
}

}  // namespace
}  // namespace poet
