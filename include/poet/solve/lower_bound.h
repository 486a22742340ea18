// The strongest proven lower bound on the POET MILP's optimum that poet finds in the time
// given without the full MILP: compute-once, then the covering bound
// (src/solve/lower_bound_covering.h). solve() takes the larger of this and CBC's own bound.
#pragma once

#include <cstdint>

#include "poet/solve/solve.h"

namespace poet {

struct LowerBound {
  double value = 0;  // energy (J) or time (s), as the objective
  BoundSource source = BoundSource::ComputeOnce;
  bool infeasible = false;  // proven: no schedule meets the budget and the deadline
};

// `seconds`: the wall clock it may take (a guard; the bounds stop at node limits first).
LowerBound lower_bound(const Graph& g, const GraphCosts& costs, const SolveOptions& o, double seconds);

}  // namespace poet
