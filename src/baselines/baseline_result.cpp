#include "poet/baselines/baseline_result.h"

#include <fmt/format.h>

#include "poet/budget/budget.h"
#include "poet/plan/plan.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {

BaselineResult no_schedule(std::string reason) {
  BaselineResult r;
  r.reason = std::move(reason);
  return r;
}

BaselineResult does_not_apply(std::string reason) {
  BaselineResult r = no_schedule(std::move(reason));
  r.applies = false;
  return r;
}

std::optional<std::string> below_smallest_working_set(const Graph& g, const SimulationOptions& options) {
  if (!options.ram_budget_bytes || g.size() == 0) return std::nullopt;
  const BudgetFloor floor = smallest_workable_budget(g, options);
  if (*options.ram_budget_bytes >= floor.bytes) return std::nullopt;
  return fmt::format("budget {} is below the {} that computing '{}' ({}) needs with its inputs and fixed memory; "
                     "no schedule fits",
                     format_bytes_exact(*options.ram_budget_bytes), format_bytes_exact(floor.bytes),
                     g.node(floor.node).name, floor.node);
}

SimulationResult simulate_baseline(const Graph& g, const GraphCosts& costs, const Schedule& s,
                                   const SimulationOptions& options) {
  return simulate_baseline(g, costs, s, plan_from_schedule(s, g), options);
}

SimulationResult simulate_baseline(const Graph& g, const GraphCosts& costs, const Schedule& s, const Plan& plan,
                                   const SimulationOptions& options) {
  try {
    return simulate_for_budget(g, costs, plan, options);
  } catch (const InvalidPlan& e) {
    fail_internal(__FILE__, __LINE__, fmt::format("baseline '{}' made an invalid plan: {}", s.method, e.what()));
  }
}

bool fits_budget(const SimulationResult& r, const SimulationOptions& options) {
  return !options.ram_budget_bytes || r.peak_bytes <= *options.ram_budget_bytes;
}

}  // namespace poet
