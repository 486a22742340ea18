// A dominance rule: never keep on storage what is not read back. A page-out whose copy no
// page-in reads before the tensor is paged out again costs energy (and, in strict
// accounting, deadline time) and gains nothing: the plan frees RAM copies by liveness
// (plan_from_schedule), so without it the tensor leaves RAM at the same point. Window
// splices leave such page-outs behind when a later window restores the tensor otherwise.
#pragma once

#include <vector>

#include "poet/schedule/schedule.h"

namespace poet::solve_internal {

// Removes the page-outs no page-in reads, with the storage copies they made; returns the
// tensors of the page-outs removed (one entry per page-out). The schedule stays valid for
// the MILP (no row needs a storage copy that nothing pages in) and for the simulator.
std::vector<NodeId> drop_unread_page_outs(Schedule& s);

}  // namespace poet::solve_internal
