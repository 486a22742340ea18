// An interrupted sweep continues where it stopped: the rows it saved come back for their
// tasks (sweep_test.cpp runs the rest), and a progress file of another sweep is refused
// rather than mixed in.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "poet/sweep/sweep_progress.h"
#include "poet/util/error.h"
#include "poet/util/json_file.h"
#include "hand_graph.h"
#include "poet/cost/cost_model.h"

namespace poet {
namespace {

const SweepIdentity kIdentity{"g, 10 nodes, activation peak 1000 B", "m4", 60, 1e-4, "0123abcd"};

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

TEST(SweepProgress, SavedRowsComeBackForTheirTasks) {
  const std::vector<SweepTask> tasks = some_tasks();
  SweepRowsSoFar saved(tasks.size());
  for (const std::size_t k : {1, 4}) {
    saved[k].emplace();
    saved[k]->task = tasks[k];
    saved[k]->found = true;  // a row without a schedule has no energy (null)
    saved[k]->energy_j = static_cast<double>(k);
  }
  const SweepRowsSoFar resumed =
      sweep_rows_to_resume(sweep_progress_to_json(kIdentity, saved), "p.json", kIdentity, tasks);
  ASSERT_EQ(resumed.size(), tasks.size());
  for (std::size_t k = 0; k < tasks.size(); ++k) {
    ASSERT_EQ(resumed[k].has_value(), k == 1 || k == 4) << k;
    if (resumed[k]) {
      EXPECT_EQ(resumed[k]->energy_j, static_cast<double>(k));
    }
  }
}

// Resuming rewrites the progress file with this sweep's tasks: a finished task it does not
// run would be lost (it was, without a word), so the resume is refused.
TEST(SweepProgress, FinishedTasksThisSweepDoesNotRunAreNotDropped) {
  SweepRowsSoFar saved(1);
  saved[0].emplace();
  saved[0]->task = {"capuchin", 50, 500, 0};  // not among some_tasks()
  try {
    sweep_rows_to_resume(sweep_progress_to_json(kIdentity, saved), "p.json", kIdentity, some_tasks());
    ADD_FAILURE() << "resumed, dropping the capuchin row";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("it holds 1 finished task this sweep does not run (the first: capuchin at "
                                         "50%), which resuming would lose"),
              std::string::npos)
        << e.what();
  }
}

// A --platform path may hold any bytes; the file holds JSON, whose text is UTF-8. The sweep
// ended in an internal error once all its tasks had run (nlohmann's dump threw).
TEST(SweepProgress, APlatformPathThatIsNotUtf8IsWrittenAndResumed) {
  const SweepIdentity identity{"g, 10 nodes, activation peak 1000 B", "/tmp/\xff\xfe-dev.json", 60, 1e-4, ""};
  SweepRowsSoFar saved(some_tasks().size());
  const std::string text = json_text(sweep_progress_to_json(identity, saved));
  EXPECT_NE(text.find("/tmp/\xEF\xBF\xBD\xEF\xBF\xBD-dev.json"), std::string::npos) << "U+FFFD for each byte";
  EXPECT_EQ(refusal(nlohmann::json::parse(text), identity), "");
  SweepIdentity other = identity;
  other.platform = "/tmp/other.json";
  EXPECT_NE(refusal(nlohmann::json::parse(text), other).find("it was made with --platform"), std::string::npos);
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
  // The same names and options, but a device profile or graph file edited in between: its
  // rows would have mixed with this sweep's (negative overheads in one table).
  other = kIdentity;
  other.costs = "4567ef01";
  EXPECT_NE(refusal(progress, other).find("made with other costs of the graph on --platform (checksum 0123abcd, now "
                                          "4567ef01): the device profile or the graph file changed since"),
            std::string::npos)
      << refusal(progress, other);
  nlohmann::json older = progress;  // written before costs were recorded: not checked
  older.erase("costs");
  EXPECT_EQ(refusal(older, other), "");

  EXPECT_NE(refusal(nlohmann::json::array(), kIdentity).find("not a sweep's progress file"), std::string::npos);
  nlohmann::json damaged = progress;
  damaged["rows"] = nlohmann::json::array({{{"method", "dtr"}}});
  EXPECT_NE(refusal(damaged, kIdentity).find("a row is damaged"), std::string::npos);
  damaged = progress;
  damaged.erase("platform");
  EXPECT_NE(refusal(damaged, kIdentity).find("damaged"), std::string::npos);
}

TEST(SweepProgress, CostsChecksumFollowsTheDeviceAndTheGraph) {
  const Graph g = testing::hand_graph();
  const GraphCosts costs = estimate_costs(g, testing::hand_device());
  EXPECT_EQ(costs_checksum(g, costs), costs_checksum(g, estimate_costs(g, testing::hand_device())));
  DeviceProfile faster = testing::hand_device();
  faster.flops_per_second *= 2;
  EXPECT_NE(costs_checksum(g, costs), costs_checksum(g, estimate_costs(g, faster)));
  GraphCosts edited = costs;
  edited.nodes[1].pagein_energy_j += 1e-9;
  EXPECT_NE(costs_checksum(g, costs), costs_checksum(g, edited));
}

// A row without a schedule had energy 0 and peak 0 (a script's cheapest point), a baseline a
// gap of 0 (read as proven optimal), no deadline a multiple of 0: each is null now, in
// sweep.json and the progress file, and an empty CSV field; read back as the row's 0.
TEST(SweepRows, WhatARowDoesNotHaveIsNull) {
  SweepRow none;
  none.task = {"capuchin", 30, 300, 0};
  none.status = "no schedule";
  const nlohmann::json j = sweep_row_to_json(none);
  for (const char* key : {"energy_j", "peak_bytes", "makespan_s", "recomputes", "pageins", "gap", "deadline_multiple"})
    EXPECT_TRUE(j.at(key).is_null()) << key;
  EXPECT_EQ(sweep_row_from_json(j).energy_j, 0);
  SweepRow baseline = none;
  baseline.found = true;
  baseline.energy_j = 2;
  EXPECT_EQ(sweep_row_to_json(baseline).at("energy_j"), 2);
  EXPECT_TRUE(sweep_row_to_json(baseline).at("gap").is_null());
  SweepRow solver = baseline;
  solver.task = {"poet", 30, 300, 1.2};
  solver.gap = 0.01;
  EXPECT_EQ(sweep_row_to_json(solver).at("gap"), 0.01);
  EXPECT_EQ(sweep_row_to_json(solver).at("deadline_multiple"), 1.2);
  EXPECT_NE(sweep_csv({none}).find("\ncapuchin,30,300,,0,no schedule,,,,,,,,,,,0.000,"), std::string::npos)
      << sweep_csv({none});
}

}  // namespace
}  // namespace poet
