#include "poet/lower/lower.h"

#include <utility>

namespace poet {

LoweredPlan lower(const Graph& g, const GraphCosts& costs, const Schedule& schedule, const LowerOptions& options) {
  return lower(g, costs, plan_from_schedule(schedule, g), options);
}

LoweredPlan lower(const Graph& g, const GraphCosts& costs, Plan plan, const LowerOptions& options) {
  LoweredPlan out;
  if (options.plan_transfers) {
    out.transfers = plan_transfers(g, costs, plan, options.simulation);
    plan = std::exchange(out.transfers.plan, {});
  }
  out.plan = std::move(plan);
  // Simulated once more after the transfers move: with the waits for memory the executor makes.
  out.simulation = simulate(g, costs, out.plan, options.simulation);
  out.buffers = in_plan_order(out.simulation.buffers);
  out.memory = plan_memory_greedy(out.buffers, options.alignment);
  return out;
}

}  // namespace poet
