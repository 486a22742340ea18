// Every method that schedules a training graph for a RAM budget, behind one interface and
// one list of names that the command line, the sweep and training read: checkpoint-all
// (the oracle and the bound), Chen's two, revolve, DTR, Capuchin, POFO, Checkmate (the
// optimizer's remat-only mode with the time objective) and POET with its two ablations.
//
// "Too tight for this method" and "this method does not apply to this graph" are answers,
// not errors: a result without a schedule says why.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/schedule/schedule.h"
#include "poet/simulate/simulator.h"

namespace poet {

struct StrategyRequest {
  SimulationOptions budget = {};  // ram_budget_bytes and what counts against it
  std::optional<double> deadline_s = std::nullopt;  // the solvers' deadline; none: no deadline
  double time_limit_s = 60;          // of a solve
  double relative_gap = 1e-4;        // a solve stops once its proven gap is this small
  std::optional<long> max_nodes = std::nullopt;  // a solve's work limit (SolveOptions::max_nodes)
  bool progress = false;             // a solve's progress lines on stderr
};

struct StrategyResult {
  std::optional<Schedule> schedule;            // none: see `detail`
  std::optional<SimulationResult> simulation;  // of `schedule` under the budget
  std::string status;  // "found" / "no schedule" / "does not apply" (to this graph), or the solver's: "optimal", ...
  std::string detail;  // the parameter a baseline chose, why there is no schedule, or a solve's message
  double gap = 0;      // a solver's proven gap; 0 for methods without one
  bool found() const { return schedule.has_value(); }
};

// oracle: checkpoint-all; baseline: a method that picks its own parameter for the budget;
// solver: the POET MILP in one of its modes.
enum class StrategyKind { Oracle, Baseline, Solver };

// In the order figures and messages list them; with a kind, only those of that kind.
std::vector<std::string> strategy_names(std::optional<StrategyKind> kind = std::nullopt);
// Whether `name` is one of them (of that kind).
bool is_strategy(std::string_view name, std::optional<StrategyKind> kind = std::nullopt);
// The comma-separated list, for messages.
std::string strategy_list();

// Throws InputError for an unknown name (listing the known ones) or a request without a
// budget (checkpoint-all alone needs none); otherwise a result, with or without a schedule.
StrategyResult schedule_for_budget(std::string_view name, const Graph& g, const GraphCosts& costs,
                                   const StrategyRequest& request);

}  // namespace poet
