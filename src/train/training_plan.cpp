#include "poet/train/training_plan.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "poet/budget/budget.h"
#include "poet/lower/fit_arena.h"
#include "poet/plan/memory_plan.h"
#include "poet/strategy/strategy.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet::train {
namespace {

[[noreturn]] void no_schedule(const std::string& strategy, std::int64_t budget, const std::string& reason) {
  throw NoSchedule(fmt::format("{} found no schedule within {}: {}", strategy, format_bytes_exact(budget), reason));
}

// Below the largest single working set no strategy can help: say what would.
void check_workable(const Graph& g, const GraphCosts& costs, const SimulationOptions& counting, std::int64_t budget) {
  const BudgetFloor least = smallest_workable_budget(g, counting);
  if (budget >= least.bytes) return;
  const double percent = std::ceil(10 * budget_scale(g, costs, counting).percent_of(least.bytes)) / 10;
  throw NoSchedule(fmt::format(
      "the RAM budget {} is below the smallest workable budget for {} at this batch size: {} ({:.1f}% of the "
      "activation peak), the parameters plus what computing '{}' needs with its inputs; give a budget of {:.1f}% or more",
      format_bytes_exact(budget), g.name(), format_bytes_exact(least.bytes), percent, g.node(least.node).name,
      percent), false);
}

}  // namespace

TrainingPlan plan_training(const Graph& g, const GraphCosts& costs, const PlanRequest& request) {
  SimulationOptions options;  // strict: the parameters count against the budget
  options.ram_budget_bytes = request.budget_bytes;
  const std::int64_t budget = request.budget_bytes;
  check_workable(g, costs, options, budget);

  const auto began = std::chrono::steady_clock::now();
  const StrategyResult r = schedule_for_budget(
      request.strategy, g, costs, {.budget = options, .time_limit_s = request.time_limit_s, .progress = request.progress});
  if (!r.found()) no_schedule(request.strategy, budget, r.detail);
  std::string detail = r.detail;
  if (is_strategy(request.strategy, StrategyKind::Solver)) {  // how the solve went
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    detail = fmt::format("{} in {:.2f} s{}{}", r.status, seconds, detail.empty() ? "" : "; ", detail);
  }

  const ScheduleForBudget replan = [&](std::int64_t at) {
    SimulationOptions lower_budget = options;
    lower_budget.ram_budget_bytes = at;
    const StrategyRequest request_at{.budget = lower_budget, .time_limit_s = request.time_limit_s, .progress = request.progress};
    return schedule_for_budget(request.strategy, g, costs, request_at).schedule;
  };
  // Checkpoint-all is one schedule at any budget: nothing to plan again.
  ArenaFit fit = lower_to_fit_arena(g, costs, *r.schedule, {.simulation = options},
                                    request.strategy == "checkpoint_all" ? ScheduleForBudget{} : replan,
                                    request.progress);
  TrainingPlan out{std::move(fit.lowered), budget, detail, replan_summary(fit, budget)};
  if (!fit.fits)
    out.note =
        arena_over_budget(out.lowered.memory.arena_bytes, out.lowered.simulation.fixed_bytes, budget).value_or("");
  return out;
}

}  // namespace poet::train
