// The paper's evaluation for one graph and device: every method at every budget, each
// schedule judged by the simulator, as rows for CSV/JSON and the figures of section 6.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"

namespace poet {

// "all" (strategy_names(), the order figures list them) or a comma-separated list of
// strategies; throws InputError naming an unknown method.
std::vector<std::string> parse_sweep_methods(const std::string& text);

struct SweepTask {
  std::string method;
  double budget_percent = 100;  // of checkpoint-all's activation peak, on top of fixed memory
  std::int64_t budget_bytes = 0;
  double deadline_multiple = 0;  // of the compute-once time; 0: no deadline
};
// "poet at 50%", "poet at 50%, deadline 1.2x": the task in messages.
std::string task_label(const SweepTask& t);

struct SweepRow {
  SweepTask task;
  bool found = false;
  std::string status;  // the method's word: "optimal", "feasible", "no schedule", ...
  std::string reason;  // why there is no schedule
  double energy_j = 0, compute_energy_j = 0, paging_energy_j = 0;
  double makespan_s = 0, compute_time_s = 0;
  std::int64_t peak_bytes = 0;
  std::size_t recomputes = 0, pageouts = 0, pageins = 0;
  double gap = 0;             // POET's proven gap; 0 for methods without one
  double method_seconds = 0;  // wall clock the method took
};

struct SweepSettings {
  int jobs = 2;               // methods run in this many processes at once
  double time_limit_s = 60;   // per POET / Checkmate solve
  double relative_gap = 1e-4; // a POET / Checkmate solve stops once its proven gap is this small
  std::optional<long> max_nodes;  // per solve: CBC's work limit (SolveOptions::max_nodes)
  bool progress = true;       // a progress bar on stderr
};

// One method at one budget. Never throws for "this budget is too tight for the method" or
// "the method does not apply to this graph": those are rows with found = false.
SweepRow run_sweep_task(const Graph& g, const GraphCosts& costs, const SweepTask& task, const SweepSettings& settings);

// One entry per task: its row once finished.
using SweepRowsSoFar = std::vector<std::optional<SweepRow>>;

// Every task, `settings.jobs` at a time in child processes (a crash or overrun of one is
// its row's reason, not the sweep's end). Rows come back in task order. Tasks with a row
// in `finished` (an interrupted sweep's, sweep_progress.h) are not run again; `on_row` is
// called with the rows so far after each task that ends.
std::vector<SweepRow> run_sweep(const Graph& g, const GraphCosts& costs, const std::vector<SweepTask>& tasks,
                                const SweepSettings& settings, SweepRowsSoFar finished = {},
                                const std::function<void(const SweepRowsSoFar&)>& on_row = {});

nlohmann::json sweep_row_to_json(const SweepRow& row);
SweepRow sweep_row_from_json(const nlohmann::json& j);
std::string sweep_csv(const std::vector<SweepRow>& rows);

// The figures, as SVG. `reference_energy_j` is checkpoint-all's (the unconstrained schedule).
std::string energy_overhead_svg(const std::vector<SweepRow>& rows, double reference_energy_j, const std::string& title);
std::string ablation_svg(const std::vector<SweepRow>& rows, double reference_energy_j, const std::string& title);
std::string poet_vs_capuchin_svg(const std::vector<SweepRow>& rows, double reference_energy_j,
                                 const std::string& title);
// Markdown: energy overhead over checkpoint-all, budgets down, `methods` across; '-' where
// a method has no schedule, 'error' where its task failed; POET's cells also give its
// proven gap.
std::string overhead_table(const std::vector<SweepRow>& rows, const std::vector<std::string>& methods,
                           double reference_energy_j);
// Markdown: POET against POFO, peak memory and step time at each budget (the paper's Table 3).
std::string poet_vs_pofo_table(const std::vector<SweepRow>& rows);

}  // namespace poet
