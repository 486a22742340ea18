// Schedules to start from: the eviction heuristic's and those of the fast baselines that
// fit the same problem (Capuchin, DTR). Each is CBC's candidate start and, when CBC cannot
// do better in time, the answer; so POET never reports worse than these methods.
#pragma once

#include <vector>

#include "restoration.h"
#include "poet/schedule/schedule.h"
#include "poet/simulate/simulator.h"
#include "poet/solve/solve.h"

namespace poet::solve_internal {

struct StartSchedule {
  Schedule schedule;
  SimulationResult simulation;  // within the budget
  double objective = 0;         // energy (J) or compute time (s), the simulator's
};

// Those that fit the budget in the simulator, meet the deadline as the MILP counts it, and
// respect the mode; cheapest first. `fixed_bytes`: what the budget holds besides activations.
std::vector<StartSchedule> start_schedules(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                           const SimulationOptions& simulation, std::int64_t fixed_bytes);

// Sorts starts cheapest first (stable: among equals, the order found).
void sort_cheapest_first(std::vector<StartSchedule>& starts);

// The eviction heuristic's schedules from a covering solution's restorations (the lower
// bound's, eviction_heuristic.h: `first`), with and without its guard on stage peaks, and
// with a deadline also meeting it after the memory. The same checks; cheapest first.
std::vector<StartSchedule> cover_starts(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                        const SimulationOptions& simulation, std::int64_t fixed_bytes,
                                        const std::vector<Restoration>& cover);

}  // namespace poet::solve_internal
