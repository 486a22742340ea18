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
// How a run differs (callers try several; one greedy choice does not suit every budget and
// deadline):
// - `guard_peaks`: skip a recomputation that would push the stage that recomputes it over
//   the budget. Without the guard, tight budgets can pile a whole network's recomputations
//   into one stage and fail (mobilenet_v2 at 30%); with it, a looser budget can end
//   costlier (resnet18_cifar m4 40%: 0.583 J against 0.576 J).
// - `first`: evictions every greedy pass makes before its own choices: the restorations of
//   a covering solution (restoration.h), whose cost is the lower bound's. Where they leave
//   a stage over the budget the greedy choices go on from there; where they are more than
//   needed, the pass undoes them as it undoes its own.
// - `deadline_after_memory`: evict as if there were no deadline, then meet it by trading
//   page-ins for recomputations (or for keeping the tensor resident), the least cost added
//   per second saved first. Where paging is cheap in energy but slow (a72: 0.15 W against
//   50 J/s of computing), choices that each fit the slack left as they come spend it on the
//   first page-outs and leave none for the stages after.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "restoration.h"
#include "poet/schedule/schedule.h"
#include "poet/solve/solve.h"

namespace poet::solve_internal {

// When a heuristic stops trying alternatives and answers with its best so far (none: it
// runs to its end), and whether that time has come: past it, or a stop asked
// (SolveOptions::stop).
using StopAt = std::optional<std::chrono::steady_clock::time_point>;
inline bool stop_now(const StopAt& stop_at, const SolveOptions& o) {
  return o.stop_requested() || (stop_at && std::chrono::steady_clock::now() > *stop_at);
}

struct EvictionChoices {
  bool guard_peaks = false;
  bool deadline_after_memory = false;
  std::vector<Restoration> first;
};

// Nothing when every idle tensor has been evicted and a stage is still over the budget,
// or when the schedule found misses the deadline. After `stop_at`, or once a stop is asked
// (SolveOptions::stop), no more tries with a kept tensor (the passes after the first that
// fits): the cheapest schedule so far is the answer.
std::optional<Schedule> eviction_schedule(const Graph& g, const GraphCosts& costs, const SolveOptions& options,
                                          std::int64_t activation_budget, const EvictionChoices& choices,
                                          StopAt stop_at = std::nullopt);

}  // namespace poet::solve_internal
