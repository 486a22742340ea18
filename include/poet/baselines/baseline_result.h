// What a baseline hands back for one budget: a schedule the simulator accepted, or the
// reason there is none. "Too tight for this method" and "this method does not apply to
// this graph" are data points of a sweep, not errors, so they are values here.
#pragma once

#include <optional>
#include <string>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/schedule/schedule.h"
#include "poet/simulate/simulator.h"

namespace poet {

struct BaselineResult {
  std::optional<Schedule> schedule;            // none: see `reason`
  std::optional<SimulationResult> simulation;  // of `schedule`, judged by simulate_for_budget
  std::string choice;                          // the parameter the method settled on
  std::string reason;                          // why there is no schedule
  bool applies = true;                         // false: the method does not apply to the graph, at any budget
  bool found() const { return schedule.has_value(); }
};

BaselineResult no_schedule(std::string reason);
// No schedule at any budget: the method does not apply to this graph (revolve and POFO
// take chains only). `reason` says why and which methods do.
BaselineResult does_not_apply(std::string reason);

// The reason a budget below budget.h's smallest_workable_budget fails, or nothing if the
// budget is not below it.
std::optional<std::string> below_smallest_working_set(const Graph& g, const SimulationOptions& options);

// Simulates `s` as simulate_for_budget does (fits_budget says whether it fits). A
// baseline's schedule that the simulator rejects is a bug in the baseline, so that throws
// InternalError rather than InvalidPlan.
SimulationResult simulate_baseline(const Graph& g, const GraphCosts& costs, const Schedule& s,
                                   const SimulationOptions& options);
// The same for a baseline that already holds the schedule's plan (plan_from_schedule).
SimulationResult simulate_baseline(const Graph& g, const GraphCosts& costs, const Schedule& s, const Plan& plan,
                                   const SimulationOptions& options);

bool fits_budget(const SimulationResult& r, const SimulationOptions& options);

}  // namespace poet
