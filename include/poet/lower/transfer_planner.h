// The transfer planner (section 5.5 of the paper): reorders paging instructions so that
// page-ins arrive just in time and page-outs overlap the computation that follows them.
#pragma once

#include "poet/plan/plan.h"
#include "poet/simulate/simulator.h"

namespace poet {

struct TransferPlanResult {
  Plan plan;
  double makespan_before_s = 0, makespan_after_s = 0;
  double stall_before_s = 0, stall_after_s = 0;  // the stall that remains
  std::size_t moved_pageins = 0, moved_pageouts = 0;
};

// Moves each page-out to right after the instruction that made its tensor, and each
// page-in to the latest position from which it arrives in time (as early as needed, no
// earlier: an early page-in holds RAM longer). A move is kept only if the simulator
// accepts the plan under `options` (the memory budget included) and the makespan does not
// grow, so the result is never worse than the input. The input plan must be valid.
// Cost: one simulation per position tried; at most `window` positions per instruction.
TransferPlanResult plan_transfers(const Graph& g, const GraphCosts& costs, const Plan& plan,
                                  const SimulationOptions& options, std::size_t window = 256);

}  // namespace poet
