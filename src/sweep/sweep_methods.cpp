// Each method of the evaluation (strategy.h) as one call: budget in, simulator-judged row out.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "poet/strategy/strategy.h"
#include "poet/sweep/sweep.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

void fill_from(SweepRow& row, const StrategyResult& r) {
  row.status = r.status;
  row.reason = r.detail;
  row.gap = r.gap;
  if (!r.simulation || !r.found()) return;
  const SimulationResult& s = *r.simulation;
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

}  // namespace

std::vector<std::string> parse_sweep_methods(const std::string& text) {
  if (text == "all") return strategy_names();
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string name(trim_spaces(std::string_view(text).substr(begin, comma - begin)));
    if (!is_strategy(name))
      throw InputError(fmt::format("--methods: unknown method '{}'; use 'all' or a list of: {}", text_excerpt(name),
                                   strategy_list()));
    // A method twice would run its tasks twice, in two columns of one name.
    if (std::ranges::find(out, name) != out.end())
      throw InputError(fmt::format("--methods lists '{}' twice; give each method once", name));
    out.push_back(name);
    begin = comma + 1;
  }
  return out;
}

SweepRow run_sweep_task(const Graph& g, const GraphCosts& costs, const SweepTask& task, const SweepSettings& settings) {
  SweepRow row;
  row.task = task;
  StrategyRequest request;  // fixed memory (the parameters) counts against the budget
  request.budget.ram_budget_bytes = task.budget_bytes;
  if (task.deadline_multiple > 0) request.deadline_s = task.deadline_multiple * costs.total_compute_time_s;
  request.time_limit_s = settings.time_limit_s;
  request.relative_gap = settings.relative_gap;
  request.max_nodes = settings.max_nodes;
  const auto began = std::chrono::steady_clock::now();
  fill_from(row, schedule_for_budget(task.method, g, costs, request));
  row.method_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (row.found && task.deadline_multiple > 0 && row.makespan_s > task.deadline_multiple * costs.total_compute_time_s * (1 + 1e-9)) {
    row.found = false;
    row.status = "no schedule";
    row.reason = fmt::format("its step takes {}, past the deadline", format_seconds(row.makespan_s));
  }
  return row;
}

}  // namespace poet
