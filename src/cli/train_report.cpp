#include "train_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "graph_source.h"
#include "poet/backward/backward.h"
#include "poet/cost/device.h"
#include "poet/profile/measure_device.h"
#include "poet/train/prediction_report.h"
#include "poet/util/atomic_file.h"
#include "poet/util/error.h"
#include "poet/util/exclusive_use.h"
#include "poet/util/interrupt.h"
#include "poet/util/json_file.h"
#include "poet/util/progress_bar.h"
#include "poet/util/units.h"

namespace poet::cli {
void run_prediction_report(const ReportRequest& r) {
  GraphSource source;
  source.model = r.model;
  source.onnx_file = r.onnx_file;
  source.loss = r.loss;
  source.batch_size = r.batch_size;
  const Graph g = source.load();
  const DeviceProfile device = resolve_device(r.platform);
  const GraphCosts costs = costs_for(g, device);
  const bool measured_here = device.nodes.has_value();
  const std::string threads_note = profile::thread_mismatch_note(device, r.platform);
  if (!threads_note.empty()) fmt::print(stderr, "poet: note: {}\n", threads_note);
  if (!measured_here && !r.json && !r.time_nodes_alongside)
    fmt::print(stderr,
               "poet: note: platform '{}' is a FLOP model of another device, so its predictions are not this "
               "machine's; profile this machine first (poet profile {} -b {} --cpu-power W --storage-power W -o "
               "profile.json, then --platform profile.json), or add --report-alongside\n",
               r.platform, model_arguments(r.model, r.onnx_file, r.loss), r.batch_size);
  const auto made_folder = make_output_folder(r.output_dir, "--report");
  constexpr std::array<std::string_view, 3> kReportFiles{"prediction.json", "prediction.md", "prediction.svg"};
  const ExclusiveUse one_report_per_folder(r.output_dir, "--report", kReportFiles);
  // Before the steps are timed, not after: a folder where a file goes, an immutable file.
  for (const std::string_view name : kReportFiles)
    if (const auto problem = output_path_problem((std::filesystem::path(r.output_dir) / name).string()))
      throw InputError(fmt::format("--report writes {} into '{}', and {}; move it away, or give --report another "
                                   "folder",
                                   name, r.output_dir, problem->substr(0, problem->find(';'))));

  train::PredictionRequest request;
  request.strategies = r.strategies;
  const BudgetScale scale = budget_scale(g, costs, {});
  for (const std::string& budget : r.ram_budgets) request.budgets.push_back({budget, parse_ram_budget(budget, scale)});
  request.time_limit_s = r.time_limit_s;
  request.update_s = device.optimizer_update_s();
  request.timing.steps = r.steps;
  request.timing.page_dir = r.page_dir;
  request.timing.direct_io = r.direct_io;
  request.timing.time_nodes_alongside = r.time_nodes_alongside;
  request.timing.seed = r.seed;
  std::optional<ProgressBar> bar;
  std::string phase;
  const auto interrupted_while = [&r](std::string_view doing) {
    set_interrupt_note(fmt::format("poet: interrupted while {}; nothing was written to '{}' (a report is written "
                                   "whole, at the end)",
                                   doing, r.output_dir));
  };
  interrupted_while("making the plans");
  const std::vector<train::PredictionRow> rows = train::predict_and_measure(
      g, costs, request, [&](const std::string& now, int done, int total, const std::string& detail) {
        if (now != phase) {
          interrupted_while(now == "planning" ? "making the plans" : "timing steps");
          if (bar) bar->finish();
          bar.emplace(now, now == "planning" ? "plan" : "round");
          phase = now;
        }
        bar->update(done, total, detail);
      });
  if (bar) bar->finish();
  set_interrupt_note("");

  const std::string title =
      r.time_nodes_alongside
          ? fmt::format("{} (batch {}): step time, predicted (node times alongside) vs measured", g.name(),
                        r.batch_size)
          : fmt::format("{} (batch {}): step time, predicted ('{}') vs measured", g.name(), r.batch_size,
                        device.name);
  const std::string base = (std::filesystem::path(r.output_dir) / "prediction").string();
  // The files still say why each plan did not run; the exit code says that none did.
  const bool none_ran = std::ranges::none_of(rows, &train::PredictionRow::ran);
  const nlohmann::json json = {{"model", g.name()},
                               {"batch_size", r.batch_size},
                               {"platform", device.name},
                               {"measured_profile", measured_here},
                               {"node_times_alongside", r.time_nodes_alongside},
                               {"median_absolute_error",
                                none_ran ? nlohmann::json() : nlohmann::json(train::median_absolute_error(rows))},
                               {"summary", train::prediction_summary(rows)},
                               {"rows", train::prediction_rows_json(rows)}};
  std::string table = train::prediction_table_markdown(rows) + "\n" + train::prediction_summary(rows) + "\n";
  if (!threads_note.empty()) table += fmt::format("\nNote: {}.\n", threads_note);
  // A report is one output: its files all from this run, or all from the last.
  write_files_atomically(std::vector<FileContents>{{base + ".json", json_text(json, 2) + "\n"},
                                                   {base + ".md", table},
                                                   {base + ".svg", train::prediction_scatter_svg(rows, title)}});
  if (r.json)
    fmt::print("{}\n", json_text(json, 2));
  else
    fmt::print("{}\n\n{}wrote {}.md, .json, .svg\n", title, table, base);
  if (none_ran)
    throw NoScheduleError("no plan ran: no --strategy made a schedule within any --ram-budget (the table says why, "
                          "row by row); raise the budgets, or choose other strategies");
}

}  // namespace poet::cli
