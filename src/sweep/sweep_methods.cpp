// Each method of the evaluation as one call: budget in, simulator-judged row out.
#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <map>

#include "poet/baselines/by_name.h"
#include "poet/baselines/checkpoint_all.h"
#include "poet/plan/plan.h"
#include "poet/solve/solve.h"
#include "poet/sweep/sweep.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

void fill_from_simulation(SweepRow& row, const SimulationResult& s) {
  row.found = true;
  row.energy_j = s.total_energy_j();
  row.compute_energy_j = s.compute_energy_j;
  row.paging_energy_j = s.paging_energy_j();
  row.makespan_s = s.makespan_s;
  row.compute_time_s = s.compute_time_s;
  row.peak_bytes = s.peak_bytes;
  row.recomputes = s.recomputes;
  row.pageouts = s.pageouts;
  row.pageins = s.pageins;
}

void from_baseline(SweepRow& row, const BaselineResult& r) {
  if (!r.found()) {
    row.status = "no schedule";
    row.reason = r.reason;
    return;
  }
  row.status = "found";
  fill_from_simulation(row, *r.simulation);
  if (!r.choice.empty()) row.reason = r.choice;
}

using Method = std::function<void(const Graph&, const GraphCosts&, const SweepTask&, const SweepSettings&,
                                  const SimulationOptions&, SweepRow&)>;

Method baseline(BaselineForBudget method) {
  return [method](const Graph& g, const GraphCosts& costs, const SweepTask&, const SweepSettings&,
                  const SimulationOptions& options, SweepRow& row) { from_baseline(row, method(g, costs, options)); };
}

Method solver(SolveMode mode, SolveObjective objective) {
  return [mode, objective](const Graph& g, const GraphCosts& costs, const SweepTask& task,
                           const SweepSettings& settings, const SimulationOptions&, SweepRow& row) {
    SolveOptions o;
    o.ram_budget_bytes = task.budget_bytes;
    if (task.deadline_multiple > 0) o.deadline_s = task.deadline_multiple * costs.total_compute_time_s;
    o.mode = mode;
    o.objective = objective;
    o.time_limit_s = settings.time_limit_s;
    o.max_nodes = settings.max_nodes;
    o.progress = false;
    const SolveResult r = solve(g, costs, o);
    row.status = std::string(solve_status_name(r.status));
    row.reason = r.message;
    row.gap = r.gap;
    if (r.simulation) fill_from_simulation(row, *r.simulation);
  };
}

std::map<std::string, Method> all_methods() {
  std::map<std::string, Method> all = {
      {"checkpoint_all",
       [](const Graph& g, const GraphCosts& costs, const SweepTask&, const SweepSettings&,
          const SimulationOptions& options, SweepRow& row) {
         SimulationOptions unbounded = options;
         unbounded.ram_budget_bytes.reset();
         const auto s = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g), unbounded);
         if (s.peak_bytes > *options.ram_budget_bytes) {
           row.status = "no schedule";
           row.reason = fmt::format("needs {}", format_bytes(s.peak_bytes));
           return;
         }
         row.status = "found";
         fill_from_simulation(row, s);
       }},
      {"checkmate", solver(SolveMode::RematOnly, SolveObjective::Time)},
      {"poet_remat", solver(SolveMode::RematOnly, SolveObjective::Energy)},
      {"poet_paging", solver(SolveMode::PagingOnly, SolveObjective::Energy)},
      {"poet", solver(SolveMode::RematAndPaging, SolveObjective::Energy)},
  };
  for (const auto& [name, method] : baselines_for_budget()) all.emplace(name, baseline(method));
  return all;
}

const std::map<std::string, Method>& methods() {
  static const std::map<std::string, Method> all = all_methods();
  return all;
}

}  // namespace

const std::vector<std::string>& sweep_method_names() {
  static const std::vector<std::string> names = {"checkpoint_all", "chen_sqrt", "chen_greedy", "revolve",
                                                 "dtr",            "capuchin",  "pofo",        "checkmate",
                                                 "poet_remat",     "poet_paging", "poet"};
  return names;
}

std::vector<std::string> parse_sweep_methods(const std::string& text) {
  if (text == "all") return sweep_method_names();
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string name = text.substr(begin, comma - begin);
    if (!methods().count(name)) {
      std::string known;
      for (const auto& n : sweep_method_names()) known += (known.empty() ? "" : ", ") + n;
      throw InputError(fmt::format("--methods: unknown method '{}'; use 'all' or a list of: {}", name, known));
    }
    out.push_back(name);
    begin = comma + 1;
  }
  return out;
}

SweepRow run_sweep_task(const Graph& g, const GraphCosts& costs, const SweepTask& task, const SweepSettings& settings) {
  SweepRow row;
  row.task = task;
  SimulationOptions options;  // fixed memory (the parameters) counts against the budget
  options.ram_budget_bytes = task.budget_bytes;
  const auto began = std::chrono::steady_clock::now();
  methods().at(task.method)(g, costs, task, settings, options, row);
  row.method_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (row.found && task.deadline_multiple > 0 && row.makespan_s > task.deadline_multiple * costs.total_compute_time_s * (1 + 1e-9)) {
    row.found = false;
    row.status = "no schedule";
    row.reason = fmt::format("its step takes {}, past the deadline", format_seconds(row.makespan_s));
  }
  return row;
}

}  // namespace poet
