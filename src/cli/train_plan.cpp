#include "train_plan.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "commands.h"
#include "graph_source.h"
#include "poet/baselines/capuchin.h"
#include "poet/baselines/checkpoint_all.h"
#include "poet/baselines/chen.h"
#include "poet/baselines/dtr.h"
#include "poet/baselines/pofo.h"
#include "poet/baselines/revolve.h"
#include "poet/plan/plan.h"
#include "poet/plan/transfer_planner.h"
#include "poet/solve/solve.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet::cli {
namespace {

using ForBudget = BaselineResult (*)(const Graph&, const GraphCosts&, const SimulationOptions&);

const std::map<std::string, ForBudget>& baselines() {
  static const std::map<std::string, ForBudget> all = {
      {"chen_sqrt", chen_sqrt_for_budget}, {"chen_greedy", chen_greedy_for_budget},
      {"revolve", revolve_for_budget},     {"dtr", dtr_for_budget},
      {"capuchin", capuchin_for_budget},   {"pofo", pofo_for_budget}};
  return all;
}

[[noreturn]] void no_schedule(const std::string& strategy, std::int64_t budget, const std::string& reason) {
  fmt::print(stderr, "poet: {} found no schedule within {}: {}\n", strategy, format_bytes_exact(budget), reason);
  fmt::print(stderr,
             "poet: raise --ram-budget or choose another --strategy (poet combines recomputation and paging)\n");
  throw ExitWith{kExitNoSchedule};
}

}  // namespace

const std::vector<std::string>& train_strategy_names() {
  static const std::vector<std::string> names = {"checkpoint_all", "chen_sqrt", "chen_greedy", "revolve", "dtr",
                                                 "capuchin",       "pofo",      "poet"};
  return names;
}

TrainPlan plan_training(const Graph& g, const GraphCosts& costs, const std::string& strategy,
                        const std::string& ram_budget, double time_limit_s, bool quiet) {
  SimulationOptions options;  // strict: the parameters count against the budget
  const std::int64_t budget = parse_ram_budget(ram_budget, g, costs, options);
  options.ram_budget_bytes = budget;

  // Below the largest single working set no strategy can help: say what would.
  const Plan all_plan = plan_from_schedule(checkpoint_all_schedule(g), g);
  const SimulationResult all = simulate(g, costs, all_plan, {});
  const std::int64_t least = g.largest_footprint().bytes + all.fixed_bytes;
  if (budget < least) {
    const double percent = std::ceil(1000.0 * static_cast<double>(least - all.fixed_bytes) /
                                     static_cast<double>(all.peak_activation_bytes)) /
                           10;
    throw InputError(fmt::format(
        "--ram-budget {} ({}) is below the smallest workable budget for {} at this batch size: {} ({:.1f}%), the "
        "parameters plus what computing '{}' needs with its inputs; use --ram-budget {:.1f}% or more",
        ram_budget, format_bytes_exact(budget), g.name(), format_bytes_exact(least), percent,
        g.node(g.largest_footprint().node).name, percent));
  }

  Schedule schedule;
  std::string detail;
  if (strategy == "checkpoint_all") {
    if (all.peak_bytes > budget)
      no_schedule(strategy, budget, fmt::format("it needs {}", format_bytes_exact(all.peak_bytes)));
    schedule = checkpoint_all_schedule(g);
  } else if (strategy == "poet") {
    SolveOptions o;
    o.ram_budget_bytes = budget;
    o.time_limit_s = time_limit_s;
    o.progress = !quiet;
    const SolveResult r = solve(g, costs, o);
    if (!r.schedule) no_schedule(strategy, budget, r.message);
    schedule = *r.schedule;
    detail = fmt::format("{} in {:.2f} s{}", solve_status_name(r.status), r.solve_time_s,
                         r.variables == 0 ? " (eviction heuristic)" : "");
    if (!r.message.empty()) detail += "; " + r.message;
  } else {
    const auto it = baselines().find(strategy);
    POET_CHECK(it != baselines().end(), "--strategy is checked by CLI11");
    const BaselineResult r = it->second(g, costs, options);
    if (!r.found()) no_schedule(strategy, budget, r.reason);
    schedule = *r.schedule;
    detail = r.choice;
  }

  // Page-ins just in time, page-outs overlapping compute, still within the budget.
  const Plan plan = plan_transfers(g, costs, plan_from_schedule(schedule, g), options).plan;
  TrainPlan out{runtime::make_executable_plan(g, costs, plan), {}, budget, detail};
  out.simulation = simulate(g, costs, out.executable.plan, {});
  const std::int64_t room = budget - out.simulation.fixed_bytes;
  if (out.executable.memory.arena_bytes > room)
    fmt::print(stderr,
               "poet: note: the arena ({}) exceeds the budget's {} for activations by {}: alignment and "
               "fragmentation of the static memory plan\n",
               format_bytes_exact(out.executable.memory.arena_bytes), format_bytes_exact(room),
               format_bytes_exact(out.executable.memory.arena_bytes - room));
  return out;
}

}  // namespace poet::cli
