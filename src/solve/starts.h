// Schedules to start from: the eviction heuristic's and those of the fast baselines that
// fit the same problem (Capuchin, DTR). Each is CBC's candidate start and, when CBC cannot
// do better in time, the answer; so POET never reports worse than these methods.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "eviction_heuristic.h"
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
// Once one is found, no heuristic run starts after `stop_at` (the solve's time limit; none
// under a work limit) or a stop asked, and a run under way ends at its best pass.
std::vector<StartSchedule> start_schedules(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                           const SimulationOptions& simulation, std::int64_t fixed_bytes,
                                           StopAt stop_at);

// Sorts starts cheapest first (stable: among equals, the order found).
void sort_cheapest_first(std::vector<StartSchedule>& starts);

// The eviction heuristic's schedules from a covering solution's restorations (the lower
// bound's, eviction_heuristic.h: `first`), with and without its guard on stage peaks, and
// with a deadline also meeting it after the memory. The same checks; cheapest first.
std::vector<StartSchedule> cover_starts(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                        const SimulationOptions& simulation, std::int64_t fixed_bytes,
                                        const std::vector<Restoration>& cover, StopAt stop_at);

// How many perturbed starts to try (perturbed_cover_starts). Work limits, so that the
// answer does not depend on the machine's speed, unless `stop_at` is set.
struct PerturbedTries {
  int tries = 0;       // at most
  int probe = 0;       // the first tries; the rest only if one of them beat `to_beat`
  double to_beat = 0;  // the best start's objective
  StopAt stop_at;  // no try starts after it (or once a stop is asked)
};

// The eviction heuristic from the cover again, each time with the cover perturbed: every
// restoration dropped, or switched between paging and recomputing, at random (try k draws
// from its own seed k, so that the result does not depend on the threads), the heuristic
// completing the rest. The greedy repair of one cover is one choice among many; on
// resnet18_cifar m4 30% the best of 48 perturbed covers costs 0.5% less than any start
// (docs/BENCHMARKS.md). Runs on both cores; returns the cheapest schedule found, if any.
std::vector<StartSchedule> perturbed_cover_starts(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                                  const SimulationOptions& simulation, std::int64_t fixed_bytes,
                                                  const std::vector<Restoration>& cover, const PerturbedTries& limits);

}  // namespace poet::solve_internal
