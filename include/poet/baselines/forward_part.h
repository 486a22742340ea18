// Shared structure the recomputation baselines rely on: where the forward part of a
// training graph ends, and which RAM residency a set of computations implies.
#pragma once

#include <cstddef>
#include <string_view>

#include "poet/graph/graph.h"
#include "poet/schedule/schedule.h"

namespace poet {

// Number of forward nodes (the loss included). The baselines reason about "the forward
// pass, then the backward pass", so every forward node must come before every backward
// node; throws InputError naming the first node out of place and the method that needs it.
std::size_t forward_part_size(const Graph& g, std::string_view method);

// Sets S_RAM from R for a schedule without paging. plan_from_schedule keeps a copy alive
// until its last read before the node is computed again, so "in RAM at the start of stage
// t" is exactly "an earlier copy is still read in stage t or later". Filling it keeps the
// matrices consistent for the solver's warm start and for the pictures.
void fill_ram_by_liveness(Schedule& s, const Graph& g);

}  // namespace poet
