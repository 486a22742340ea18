#include "poet/runtime/executor.h"

namespace poet::runtime {

ExecutablePlan make_executable_plan(const Graph& g, const GraphCosts& costs, Plan plan, std::int64_t alignment) {
  SimulationResult sim = simulate(g, costs, plan);
  // The simulator ranks buffers by time, where a page-in that waits for the bus starts after
  // the free of a later instruction; the executor runs in plan order (and waits for any
  // transfer still touching bytes it reuses), so the arena is planned over plan order.
  for (BufferLife& b : sim.buffers) {
    b.alloc_rank = b.created_by;
    b.release_rank = b.released_by;
  }
  ExecutablePlan p{std::move(plan), std::move(sim.buffers), {}};
  p.memory = plan_memory_greedy(p.buffers, alignment);
  return p;
}

}  // namespace poet::runtime
