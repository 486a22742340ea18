// Large-neighbourhood search with the exact MILP: from a valid schedule, fix everything
// outside a window (milp_model.h's Window), solve the window's MILP exactly with CBC from
// the incumbent, splice an improvement in when the simulator confirms it, slide on and
// repeat. Two kinds of window:
// - stage windows: every decision in stages [begin, end), both boundary states fixed; two
//   disjoint ones run at once, one CBC child per core, with the deadline's slack split;
// - tensor windows: a group of consecutive long-lived tensors, and the tensors one edge from
//   them, free in every stage from the first one's computation to the last use of any,
//   every other tensor pinned to the incumbent's decisions. These trade what is kept across the loss against what is
//   recomputed or paged, which no short stage window can; two run at once, the better kept.
//
// Sizes follow deterministic rules, not seconds: stage windows start at 8 stages, shortened
// to about kInitialColumns columns where the graph is dense; tensor windows at 4 tensors. A
// sweep over the graph that improves nothing doubles both (columns up to kMaxWindowColumns);
// a window CBC could not finish in its share of the time halves them. The search stops at
// the time limit, after `max_windows` windows solved, or when a sweep at the largest sizes
// improves nothing.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "poet/schedule/schedule.h"
#include "poet/simulate/simulator.h"
#include "poet/solve/solve.h"

namespace poet::solve_internal {

struct SearchLimits {
  std::chrono::steady_clock::time_point deadline;  // wall clock for the whole search
  std::optional<int> max_windows;                  // a work limit (tests): windows solved
  double good_enough = 0;  // an objective at or below which the search ends: proven within the gap asked
  std::function<void(double)> improved = {};  // called with each better objective spliced in (progress)
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

// `start` is a schedule the simulator accepts; windows where the MILP does not accept it (a
// baseline's start may count memory otherwise) are skipped. `judge` simulates a schedule
// (throwing InvalidPlan when the simulator rejects it). Every schedule kept has been judged.
SearchResult neighbourhood_search(const Graph& g, const GraphCosts& costs, const SolveOptions& options,
                                  std::int64_t activation_budget, const Schedule& start,
                                  const std::function<SimulationResult(const Schedule&)>& judge,
                                  const SearchLimits& limits);

}  // namespace poet::solve_internal
