// The trivial arena planner: no reuse at all. The oracle the greedy planner is tested
// against, and its upper bound.
#include <fmt/format.h>

#include "poet/plan/memory_plan.h"
#include "poet/util/error.h"

namespace poet {

MemoryPlan plan_memory_linear(const std::vector<BufferLife>& buffers, std::int64_t alignment) {
  if (alignment <= 0)
    throw InputError(fmt::format("memory plan: alignment {} bytes; it must be at least 1", alignment));
  MemoryPlan plan;
  plan.offsets.reserve(buffers.size());
  for (const BufferLife& b : buffers) {
    plan.offsets.push_back(b.bytes == 0 ? 0 : plan.arena_bytes);  // as the greedy planner does
    plan.arena_bytes += align_up(b.bytes, alignment);
  }
  plan.peak_live_bytes = peak_live_bytes(buffers, alignment);
  return plan;
}

}  // namespace poet
