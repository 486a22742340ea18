// The trivial arena planner: no reuse at all (but for buffers computed in place). The
// oracle the greedy planner is tested against, and its upper bound.
#include <fmt/format.h>

#include "poet/plan/memory_plan.h"
#include "poet/util/error.h"

namespace poet {

MemoryPlan plan_memory_linear(const std::vector<BufferLife>& buffers, std::int64_t alignment) {
  if (alignment <= 0)
    throw InputError(fmt::format("memory plan: alignment {} bytes; it must be at least 1", alignment));
  const InPlaceChains chains = in_place_chains(buffers);
  MemoryPlan plan;
  plan.offsets.reserve(chains.chains.size());
  for (const BufferLife& b : chains.chains) {
    plan.offsets.push_back(b.bytes == 0 ? 0 : plan.arena_bytes);  // as the greedy planner does
    plan.arena_bytes += align_up(b.bytes, alignment);
  }
  plan.peak_live_bytes = peak_live_bytes(buffers, alignment);
  return chains.per_buffer(plan);
}

}  // namespace poet
