// Whether a stage of the POET MILP can recompute a tensor within the activation budget: the
// covering bound (lower_bound_covering.h) asks it of the recomputations it relies on.
//
// The check is a relaxation of that one stage's rows of the MILP: the stage computes its
// own node s and the tensor a (a < s), and keeps a from its step to the end of the stage;
// everything else is free: any tensor may be resident at the stage's start, at no cost but
// its memory, and any node up to s may be recomputed. A tensor counts at a step when it is
// resident then and a node computed at that step or later in the stage reads it, exactly as
// the MILP's memory rows count it (they hold more: tensors kept into the next stage). Only
// the steps from a (or from an input recomputed with it in the stage) to s are checked.
// When even this relaxation has no room, no schedule recomputes a in stage s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "poet/solve/solve.h"

namespace poet::solve_internal {

// False only when proven: no way to recompute `tensor` in `stage` (and `input_too`, one of
// its inputs, in the same stage) keeps every step of the stage within `activation_budget`
// bytes. True when there may be one, or when CBC stopped at `node_limit` without deciding.
bool stage_has_room_to_recompute(const Graph& g, const GraphCosts& costs, std::size_t stage, std::size_t tensor,
                                 std::optional<std::size_t> input_too, std::int64_t activation_budget,
                                 long node_limit);

}  // namespace poet::solve_internal
