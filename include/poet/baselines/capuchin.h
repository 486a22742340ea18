// Capuchin (Peng et al., ASPLOS 2020): swap first, recompute only what swapping cannot cover.
//
// Starting from checkpoint-all, while the simulator finds the schedule over the budget, it
// looks at the stage of the peak and evicts a tensor that is resident there but idle
// (between two reads):
//   1. page it out after the read before the gap and back in during the stage before the
//      read after it, choosing the candidate with the largest free window per second of
//      transfer (compute time of the gap's stages / page-out + page-in time; ties: bigger);
//   2. only when no paging candidate lowers the excess over the budget, drop it and
//      recompute it in the stage that next reads it, choosing by memory saving per second
//      of recomputation (bytes / compute time of it and of the inputs it recomputes).
//      Inputs not in RAM in that stage are recomputed there too, recursively, as Capuchin
//      recomputes from the nearest resident ancestors; inputs in RAM there anyway are read,
//      so a recomputation never lengthens another tensor's life. Sources are never dropped
//      for their own sake (Capuchin evicts activations) but may be read again. A gap
//      already paged may turn into a recomputation: a page-out too slow to free its buffer
//      before the peak is what "paging cannot cover" looks like in the simulator.
// A candidate is kept only if it lowers the summed excess of the memory timeline; when no
// candidate at the peak does, the budget is too tight for Capuchin.
#pragma once

#include <functional>

#include "poet/baselines/baseline_result.h"

namespace poet {

BaselineResult capuchin_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options);
// The same, asking `give_up` between the simulations that judge candidates (a solve's time
// limit or Ctrl-C); once it says yes, the result is no schedule.
BaselineResult capuchin_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options,
                                   const std::function<bool()>& give_up);

}  // namespace poet
