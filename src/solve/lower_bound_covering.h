// A lower bound on the POET MILP's optimum from the budget alone, far cheaper than the MILP:
// the covering bound. Every node is computed once; on top of that, wherever the tensors
// alive across a stage in compute-once order exceed the budget, some of them must be absent,
// and each absence costs a restoration (a recomputation, or a page-in after a page-out); a
// recomputation also needs its inputs: past their last reader, kept (taking their memory)
// or restored, and room in the stage that makes it: a recomputation the cover relies on
// relieves only the stages before the latest one with room for it, and an input recomputed
// for it in an earlier stage is held from then on. Solving that small covering problem
// exactly gives the bound. The proof is in the .cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "restoration.h"

#include "poet/solve/solve.h"

namespace poet::solve_internal {

struct CoveringBound {
  double bound = 0;    // energy (J) or time (s), as the objective; compute-once included
  bool proven = true;  // false: CBC stopped at a limit, and `bound` is its best proven bound
  int columns = 0, rows = 0;
  // The restorations of the cover that gave the bound (CBC's best, unless none was found):
  // often a schedule's worth, which the eviction heuristic completes (eviction_heuristic.h).
  std::vector<Restoration> cover;
};

// `activation_budget`: the bytes the MILP's memory rows allow (the budget less fixed memory).
// CBC stops after `node_limit` nodes or `seconds` (a guard for huge graphs; tests rely on the
// node limit). At most `max_room_checks` stages are checked for room to recompute a tensor
// (recomputation_room.h), each a small CBC problem. None when the covering problem is
// infeasible: then no schedule meets the budget and the deadline, and the caller decides
// what to make of it.
std::optional<CoveringBound> covering_lower_bound(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                                  std::int64_t activation_budget, long node_limit,
                                                  std::size_t max_room_checks, double seconds);

}  // namespace poet::solve_internal
