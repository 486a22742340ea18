#include "poet/baselines/baseline_result.h"

#include <fmt/format.h>

#include "poet/plan/plan.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {

BaselineResult no_schedule(std::string reason) {
  BaselineResult r;
  r.reason = std::move(reason);
  return r;
}

std::int64_t counted_fixed_bytes(const Graph& g, const SimulationOptions& options) {
  const FixedMemory fixed = g.fixed_memory(options.optimizer);
  return (options.count_parameters ? fixed.parameter_bytes : 0) +
         (options.count_gradients ? fixed.gradient_bytes + fixed.optimizer_state_bytes : 0);
}

std::optional<std::string> below_smallest_working_set(const Graph& g, const SimulationOptions& options) {
  if (!options.ram_budget_bytes || g.size() == 0) return std::nullopt;
  const Graph::Footprint largest = g.largest_footprint();
  const std::int64_t needed = largest.bytes + counted_fixed_bytes(g, options);
  if (*options.ram_budget_bytes >= needed) return std::nullopt;
  return fmt::format("budget {} is below the {} that computing '{}' ({}) needs with its inputs and fixed memory; "
                     "no schedule fits",
                     format_bytes_exact(*options.ram_budget_bytes), format_bytes_exact(needed),
                     g.node(largest.node).name, largest.node);
}

SimulationResult simulate_baseline(const Graph& g, const GraphCosts& costs, const Schedule& s,
                                   const SimulationOptions& options) {
  try {
    return simulate_for_budget(g, costs, plan_from_schedule(s, g), options);
  } catch (const InvalidPlan& e) {
    fail_internal(__FILE__, __LINE__, fmt::format("baseline '{}' made an invalid plan: {}", s.method, e.what()));
  }
}

bool fits_budget(const SimulationResult& r, const SimulationOptions& options) {
  return !options.ram_budget_bytes || r.peak_bytes <= *options.ram_budget_bytes;
}

}  // namespace poet
