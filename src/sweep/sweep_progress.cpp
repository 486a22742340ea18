#include "poet/sweep/sweep_progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "poet/util/error.h"
#include "poet/util/json_file.h"
#include "poet/util/units.h"

namespace poet {
namespace {

constexpr const char* kFormat = "poet-sweep-progress";

bool same_task(const SweepTask& a, const SweepTask& b) {
  return a.method == b.method && a.budget_percent == b.budget_percent && a.budget_bytes == b.budget_bytes &&
         a.deadline_multiple == b.deadline_multiple;
}

// `text` as the progress file gives it back: json_text wrote its invalid UTF-8 (a --platform
// path may hold any bytes) as U+FFFD.
std::string as_written(const std::string& text) { return nlohmann::json::parse(json_text(text)).get<std::string>(); }

}  // namespace

std::size_t rows_finished(const SweepRowsSoFar& rows) {
  return static_cast<std::size_t>(std::ranges::count_if(rows, [](const auto& row) { return row.has_value(); }));
}

nlohmann::json sweep_progress_to_json(const SweepIdentity& identity, const SweepRowsSoFar& rows) {
  nlohmann::json finished = nlohmann::json::array();
  for (const auto& row : rows)
    if (row) finished.push_back(sweep_row_to_json(*row));
  return {{"format", kFormat},
          {"version", 1},
          {"graph", identity.graph},
          {"platform", identity.platform},
          {"time_limit_s", identity.time_limit_s},
          {"relative_gap", identity.relative_gap},
          {"costs", identity.costs},
          {"rows", finished}};
}

SweepRowsSoFar sweep_rows_to_resume(const nlohmann::json& progress, const std::string& path,
                                    const SweepIdentity& identity, const std::vector<SweepTask>& tasks) {
  const auto refuse = [&](const std::string& why) {
    return InputError(fmt::format("cannot resume from '{}': {}", path, why));
  };
  if (!progress.is_object() || progress.value("format", "") != kFormat)
    throw refuse("it is not a sweep's progress file (written by an interrupted poet sweep)");
  const auto differs = [&](const char* what, const std::string& then, const std::string& now) {
    return refuse(fmt::format("it was made with {} {}, not {}; resume with the options it was made with, or remove "
                              "it to start afresh",
                              what, then, now));
  };
  SweepIdentity then;
  try {
    // Files of older poets have neither version nor costs: their costs go unchecked.
    then = {progress.at("graph"), progress.at("platform"), progress.at("time_limit_s"), progress.at("relative_gap"),
            progress.value("costs", identity.costs)};
  } catch (const nlohmann::json::exception&) {
    throw refuse("it is damaged (a field is missing or of the wrong type); remove it to start afresh");
  }
  if (then.graph != as_written(identity.graph)) throw differs("the graph", then.graph, identity.graph);
  if (then.platform != as_written(identity.platform)) throw differs("--platform", then.platform, identity.platform);
  if (then.time_limit_s != identity.time_limit_s)
    throw differs("--time-limit", fmt::format("{:g}", then.time_limit_s), fmt::format("{:g}", identity.time_limit_s));
  if (then.relative_gap != identity.relative_gap)
    throw differs("--gap", fmt::format("{:g}", then.relative_gap), fmt::format("{:g}", identity.relative_gap));
  if (then.costs != identity.costs)
    throw refuse(fmt::format("it was made with other costs of the graph on --platform (checksum {}, now {}): the "
                             "device profile or the graph file changed since, and its rows would mix with this "
                             "sweep's; remove it to start afresh, or restore the files it was made with",
                             then.costs, identity.costs));

  SweepRowsSoFar rows(tasks.size());
  std::vector<SweepTask> not_run;  // finished tasks this sweep does not have: resuming would lose them
  try {
    for (const nlohmann::json& j : progress.at("rows")) {
      const SweepRow row = sweep_row_from_json(j);
      const auto task = std::ranges::find_if(tasks, [&](const SweepTask& t) { return same_task(t, row.task); });
      if (task == tasks.end()) {
        not_run.push_back(row.task);
      } else if (auto& slot = rows[static_cast<std::size_t>(task - tasks.begin())]; !slot) {
        slot = row;
      }
    }
  } catch (const nlohmann::json::exception&) {
    throw refuse("a row is damaged; remove the file to start afresh");
  }
  if (!not_run.empty()) {
    throw refuse(fmt::format(
        "it holds {} this sweep does not run (the first: {}), which resuming would lose; resume with the --budgets, "
        "--methods and deadlines it was made with (more tasks are fine), or remove it to start afresh",
        counted(not_run.size(), "finished task"), task_label(not_run.front())));
  }
  return rows;
}

}  // namespace poet
