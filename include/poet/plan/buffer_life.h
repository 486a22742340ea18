// A buffer's life in a plan: what the simulator reports of each RAM copy of a tensor and
// what every static memory plan (memory_plan.h, the device format) places in an arena.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "poet/graph/graph.h"

namespace poet {

// One RAM copy of a tensor, from the event that takes its buffer (a compute or page-in
// start) to the event that releases it (its free, or the end of its page-out). Events are
// ranked in the order the memory sweep applies them, so two buffers overlap in time exactly
// when their [alloc_rank, release_rank) ranges intersect. A buffer never freed is released
// at rank = number of events. A compute in place releases its input's buffer as it takes
// it: released_by = created_by of the taker, and its release ranks before the allocation.
struct BufferLife {
  NodeId node;
  std::int64_t bytes;
  std::size_t alloc_rank, release_rank;
  std::size_t created_by, released_by;  // instruction indices (released_by = plan size if never freed)
  // The buffer whose bytes this one takes, computed over them in place (graph's
  // in_place_input): released by the compute that creates this one, it must have this
  // one's offset in every arena.
  std::optional<std::size_t> in_place_of = std::nullopt;
};

}  // namespace poet
