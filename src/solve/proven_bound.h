// lower_bound() (poet/solve/lower_bound.h) with what solve() also takes from it: the
// restorations of the covering solution behind the bound, a start for the eviction heuristic.
#pragma once

#include <vector>

#include "restoration.h"
#include "poet/solve/lower_bound.h"

namespace poet::solve_internal {

struct ProvenBound {
  LowerBound bound;
  std::vector<Restoration> cover;  // empty unless the covering bound found a cover
};

ProvenBound proven_bound(const Graph& g, const GraphCosts& costs, const SolveOptions& o, double seconds);

}  // namespace poet::solve_internal
