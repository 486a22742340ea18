#include "poet/plan/memory_plan.h"
#include "poet/runtime/executor.h"

namespace poet::runtime {

ExecutablePlan make_executable_plan(const Graph& g, const GraphCosts& costs, Plan plan, std::int64_t alignment) {
  // Planned over plan order, the order the executor runs (in_plan_order says why).
  std::vector<BufferLife> buffers = in_plan_order(simulate(g, costs, plan).buffers);
  ExecutablePlan p{std::move(plan), std::move(buffers), {}};
  p.memory = plan_memory_greedy(p.buffers, alignment);
  return p;
}

}  // namespace poet::runtime
