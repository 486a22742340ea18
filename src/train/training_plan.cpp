#include "poet/train/training_plan.h"

#include <fmt/format.h>

#include <cmath>

#include "poet/baselines/by_name.h"
#include "poet/baselines/checkpoint_all.h"
#include "poet/plan/plan.h"
#include "poet/solve/solve.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet::train {
namespace {

[[noreturn]] void no_schedule(const std::string& strategy, std::int64_t budget, const std::string& reason) {
  throw NoSchedule(fmt::format("{} found no schedule within {}: {}", strategy, format_bytes_exact(budget), reason));
}

// Below the largest single working set no strategy can help: say what would.
void check_workable(const Graph& g, const SimulationResult& all, std::int64_t budget) {
  const std::int64_t least = g.largest_footprint().bytes + all.fixed_bytes;
  if (budget >= least) return;
  const double percent =
      std::ceil(1000.0 * static_cast<double>(least - all.fixed_bytes) / static_cast<double>(all.peak_activation_bytes)) /
      10;
  throw InputError(fmt::format(
      "the RAM budget {} is below the smallest workable budget for {} at this batch size: {} ({:.1f}% of the "
      "activation peak), the parameters plus what computing '{}' needs with its inputs; give a budget of {:.1f}% or more",
      format_bytes_exact(budget), g.name(), format_bytes_exact(least), percent,
      g.node(g.largest_footprint().node).name, percent));
}

}  // namespace

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"checkpoint_all", "chen_sqrt", "chen_greedy", "revolve", "dtr",
                                                 "capuchin",       "pofo",      "poet"};
  return names;
}

TrainingPlan plan_training(const Graph& g, const GraphCosts& costs, const PlanRequest& request) {
  SimulationOptions options;  // strict: the parameters count against the budget
  options.ram_budget_bytes = request.budget_bytes;
  const std::int64_t budget = request.budget_bytes;
  const SimulationResult all = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g), {});
  check_workable(g, all, budget);

  Schedule schedule;
  std::string detail;
  const std::string& strategy = request.strategy;
  if (strategy == "checkpoint_all") {
    if (all.peak_bytes > budget) no_schedule(strategy, budget, fmt::format("it needs {}", format_bytes_exact(all.peak_bytes)));
    schedule = checkpoint_all_schedule(g);
  } else if (strategy == "poet") {
    SolveOptions o;
    o.ram_budget_bytes = budget;
    o.time_limit_s = request.time_limit_s;
    o.progress = request.progress;
    const SolveResult r = solve(g, costs, o);
    if (!r.schedule) no_schedule(strategy, budget, r.message);
    schedule = *r.schedule;
    detail = fmt::format("{} in {:.2f} s{}", solve_status_name(r.status), r.solve_time_s,
                         r.variables == 0 ? " (eviction heuristic)" : "");
    if (!r.message.empty()) detail += "; " + r.message;
  } else {
    const auto it = baselines_for_budget().find(strategy);
    if (it == baselines_for_budget().end())
      throw InputError(fmt::format("unknown training strategy '{}'; use one of {}", strategy,
                                   fmt::join(strategy_names(), ", ")));
    const BaselineResult r = it->second(g, costs, options);
    if (!r.found()) no_schedule(strategy, budget, r.reason);
    schedule = *r.schedule;
    detail = r.choice;
  }

  TrainingPlan out{lower(g, costs, schedule, {.simulation = options}), budget, detail, {}};
  const std::int64_t room = budget - out.lowered.simulation.fixed_bytes;
  const std::int64_t arena = out.lowered.memory.arena_bytes;
  if (arena > room)
    out.note = fmt::format(
        "the arena ({}) exceeds the budget's {} for activations by {}: alignment and fragmentation of the static "
        "memory plan",
        format_bytes_exact(arena), format_bytes_exact(room), format_bytes_exact(arena - room));
  return out;
}

}  // namespace poet::train
