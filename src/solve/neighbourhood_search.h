// Large-neighbourhood search with the exact MILP: from a schedule the full model accepts,
// fix everything outside a window of stages, solve the window's MILP (milp_model.h's
// Window) exactly with CBC from the incumbent, splice an improvement in when the simulator
// confirms it, slide on and repeat. Two disjoint windows run at once, one CBC child each
// (the machine's two cores), with the deadline's slack split between them.
//
// Window sizes follow a deterministic rule in columns, not seconds: a sweep over the graph
// uses windows of one length; a sweep that improves nothing doubles the length (up to the
// whole graph's or kMaxWindowColumns), a window CBC could not finish halves it. The search
// stops at the time limit, after `max_windows`, or when a sweep at the largest length
// improves nothing.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "poet/schedule/schedule.h"
#include "poet/simulate/simulator.h"
#include "poet/solve/solve.h"

namespace poet::milp {

struct SearchLimits {
  std::chrono::steady_clock::time_point deadline;  // wall clock for the whole search
  std::optional<int> max_windows;                  // a work limit (tests): windows solved
};

struct SearchResult {
  Schedule schedule;            // the best found: the start when nothing improved
  SimulationResult simulation;  // the simulator's figures for it
  double objective = 0;         // the simulator's energy (J) or compute time (s)
  double milp_objective = 0;    // the MILP's count of the same, for the caller's check
  int windows_solved = 0;       // windows whose MILP CBC returned a solution for
  int windows_improved = 0;     // those spliced in
  double seconds = 0;
};

// `start` must satisfy the full model (MilpModel over every stage with these options and
// budget); `judge` simulates a schedule (throwing InvalidPlan when the simulator rejects
// it). Every schedule kept has been judged.
SearchResult neighbourhood_search(const Graph& g, const GraphCosts& costs, const SolveOptions& options,
                                  std::int64_t activation_budget, const Schedule& start,
                                  const std::function<SimulationResult(const Schedule&)>& judge,
                                  const SearchLimits& limits);

}  // namespace poet::milp
