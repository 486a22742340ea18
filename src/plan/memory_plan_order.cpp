#include "poet/plan/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "poet/util/error.h"

namespace poet {

std::vector<BufferLife> in_plan_order(std::vector<BufferLife> buffers) {
  for (BufferLife& b : buffers) {
    b.alloc_rank = b.created_by;
    b.release_rank = b.released_by;
  }
  return buffers;
}

InPlaceChains in_place_chains(const std::vector<BufferLife>& buffers) {
  InPlaceChains out;
  out.chain_of.resize(buffers.size());
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    const BufferLife& life = buffers[b];
    if (!life.in_place_of) {
      out.chain_of[b] = out.chains.size();
      out.chains.push_back(life);
      out.chains.back().in_place_of.reset();
      continue;
    }
    if (*life.in_place_of >= b)
      throw InputError(fmt::format("buffer {} (node {}) takes the bytes of buffer {}, which does not come before it",
                                   b, life.node, *life.in_place_of));
    BufferLife& chain = out.chains[out.chain_of[b] = out.chain_of[*life.in_place_of]];
    chain.bytes = std::max(chain.bytes, life.bytes);
    chain.alloc_rank = std::min(chain.alloc_rank, life.alloc_rank);
    chain.release_rank = std::max(chain.release_rank, life.release_rank);
    chain.released_by = std::max(chain.released_by, life.released_by);
  }
  return out;
}

MemoryPlan InPlaceChains::per_buffer(const MemoryPlan& of_chains) const {
  MemoryPlan plan = of_chains;
  plan.offsets.clear();
  for (const std::size_t c : chain_of) plan.offsets.push_back(of_chains.offsets[c]);
  return plan;
}

}  // namespace poet
