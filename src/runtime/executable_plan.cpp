#include "poet/runtime/executor.h"

namespace poet::runtime {

ExecutablePlan make_executable_plan(const Graph& g, const GraphCosts& costs, Plan plan, std::int64_t alignment) {
  SimulationResult sim = simulate(g, costs, plan);
  ExecutablePlan p{std::move(plan), std::move(sim.buffers), {}};
  p.memory = plan_memory_greedy(p.buffers, alignment);
  return p;
}

}  // namespace poet::runtime
