// A fast schedule for a tight budget, found without the MILP: the MILP's start, and the
// answer when the MILP cannot improve on it in time (large graphs, tight limits).
//
// It starts from checkpoint-all and, while some stage of the schedule is over the budget,
// evicts a tensor that is resident but idle there: either pages it out after its last use
// and back in before its next one, or drops it and recomputes it in the stage that next
// needs it, with whatever of its inputs is not resident either (recomputed too, or, for
// small inputs, kept resident until then). Each step takes the eviction with the least
// cost (energy, or time for the time objective) per byte-stage of over-budget memory it
// relieves. When every stage fits, it undoes the evictions that later ones made needless,
// the costliest first, then swaps a tensor's recomputations for page-ins and a page-in for
// a recomputation, tensor by tensor, wherever that costs less (one page-out can serve
// several page-ins, which no single greedy step sees). A recomputation also pages in an
// input instead of recomputing it where that is cheaper. Then the whole again, with the
// costliest recomputed tensor never dropped for a recomputation (a few tensors, one at a
// time), keeping the cheaper schedule. A pass that meets a stage over the budget with
// nothing idle left starts again without the recomputations into that stage. Memory is
// counted exactly as the MILP counts it, so a schedule it returns is a valid MIP start.
//
// `guard_peaks`: skip a recomputation that would push the stage that recomputes it over the
// budget. Without the guard, tight budgets can pile a whole network's recomputations into
// one stage and fail (mobilenet_v2 at 30%); with it, a looser budget can end costlier
// (resnet18_cifar m4 40%: 0.583 J against 0.576 J). Callers try both.
#pragma once

#include <cstdint>
#include <optional>

#include "poet/schedule/schedule.h"
#include "poet/solve/solve.h"

namespace poet::solve_internal {

// Nothing when every idle tensor has been evicted and a stage is still over the budget,
// or when the schedule found misses the deadline.
std::optional<Schedule> eviction_schedule(const Graph& g, const GraphCosts& costs, const SolveOptions& options,
                                          std::int64_t activation_budget, bool guard_peaks);

}  // namespace poet::solve_internal
