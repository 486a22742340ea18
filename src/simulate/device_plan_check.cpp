#include "poet/simulate/device_plan_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "poet/plan/memory_plan.h"
#include "poet/util/units.h"

namespace poet {

DevicePlanVerdict check_device_plan(const Graph& g, const GraphCosts& costs, const DevicePlan& plan,
                                    const SimulationOptions& options) {
  DevicePlanVerdict verdict;
  if (plan.node_count != g.size()) {
    verdict.error = fmt::format("the plan is for a graph of {} nodes, and '{}' has {}: check it against the "
                                "graph it was made for (its --model, --batch-size and --backward)",
                                plan.node_count, g.name(), g.size());
    return verdict;
  }
  SimulationResult r;
  try {
    r = simulate(g, costs, plan.plan, options);
  } catch (const InvalidPlan& e) {
    verdict.error = e.what();
    verdict.instruction = e.instruction;
    return verdict;
  }
  // The simulator makes one buffer per compute and page-in; the device plan has their
  // offsets in plan order.
  std::vector<std::int64_t> offset_of(plan.plan.instructions.size(), 0);
  std::size_t next = 0;
  for (std::size_t p = 0; p < plan.plan.instructions.size(); ++p)
    if (creates_buffer(plan.plan.instructions[p].kind) && next < plan.offsets.size())
      offset_of[p] = plan.offsets[next++];
  MemoryPlan memory;
  memory.arena_bytes = plan.arena_bytes;
  for (const BufferLife& b : r.buffers) memory.offsets.push_back(offset_of[b.created_by]);
  if (next != plan.offsets.size() || r.buffers.size() != plan.offsets.size()) {
    verdict.error = fmt::format("the plan has {} arena offsets for {} buffers", plan.offsets.size(), r.buffers.size());
    return verdict;
  }
  // Held to the lifetimes the arena was planned over: plan order, the order a device runs.
  if (const auto fault = find_arena_fault(in_plan_order(r.buffers), memory, plan.alignment)) {
    const std::size_t p = r.buffers[fault->buffer].created_by;
    verdict.error = fmt::format("instruction {} ({}): {}", p, describe(plan.plan.instructions[p], g), fault->message);
    verdict.instruction = p;
    return verdict;
  }
  // poet's memory planner makes the arena exactly as large as its buffers reach. One that
  // reaches less was placed for larger tensors: a plan of the model at a larger batch size
  // has as many nodes, and its buffers hold this graph's smaller tensors too.
  std::int64_t reach = 0;
  for (std::size_t b = 0; b < r.buffers.size(); ++b)
    reach = std::max(reach, memory.offsets[b] + align_up(r.buffers[b].bytes, plan.alignment));
  if (reach < plan.arena_bytes) {
    verdict.error = fmt::format(
        "its arena is {}, but for '{}' its buffers reach only {}: it was placed for larger tensors (made for another "
        "--batch-size?)",
        format_bytes_exact(plan.arena_bytes), g.name(), format_bytes_exact(reach));
    return verdict;
  }
  if (options.ram_budget_bytes)
    if (auto over = arena_over_budget(plan.arena_bytes, r.fixed_bytes, *options.ram_budget_bytes)) {
      verdict.error = std::move(*over);
      return verdict;
    }
  verdict.simulation = std::move(r);
  return verdict;
}

}  // namespace poet
