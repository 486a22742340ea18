#include "poet/solve/solve.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "guarded_solve.h"
#include "milp_model.h"
#include "poet/baselines/checkpoint_all.h"
#include "poet/plan/plan.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

// Any schedule holds a node's inputs and output at once when it computes the node.
std::int64_t largest_footprint(const Graph& g) {
  std::int64_t most = 0;
  for (const auto& n : g.nodes()) {
    std::int64_t bytes = n.bytes;
    for (NodeId in : std::set<NodeId>(n.inputs.begin(), n.inputs.end())) bytes += g.node(in).bytes;
    most = std::max(most, bytes);
  }
  return most;
}

bool satisfies(const milp::MilpModel& m, const std::vector<double>& x) {
  constexpr double kTolerance = 1e-7;
  for (int c = 0; c < m.columns(); ++c)
    if (x[c] < m.lower()[c] - kTolerance || x[c] > m.upper()[c] + kTolerance) return false;
  for (const auto& row : m.constraint_rows()) {
    double value = 0;
    for (std::size_t k = 0; k < row.columns.size(); ++k) value += row.values[k] * x[static_cast<std::size_t>(row.columns[k])];
    if (value < row.lower - kTolerance || value > row.upper + kTolerance) return false;
  }
  return true;
}

}  // namespace

std::string_view solve_status_name(SolveStatus s) {
  switch (s) {
    case SolveStatus::Optimal: return "optimal";
    case SolveStatus::Feasible: return "feasible";
    case SolveStatus::Infeasible: return "infeasible";
    case SolveStatus::NoSolution: return "no solution found in the time limit";
  }
  return "unknown";
}

SolveResult solve(const Graph& g, const GraphCosts& costs, const SolveOptions& o) {
  SolveResult result;
  const bool strict = o.accounting == Accounting::Strict;
  const FixedMemory fixed = g.fixed_memory(o.optimizer);
  const std::int64_t fixed_bytes =
      strict ? fixed.parameter_bytes + (o.count_gradients ? fixed.gradient_bytes + fixed.optimizer_state_bytes : 0) : 0;
  const std::int64_t needed = largest_footprint(g) + fixed_bytes;
  if (o.ram_budget_bytes < needed) {
    result.status = SolveStatus::Infeasible;
    result.smallest_feasible_budget = needed;
    result.message = fmt::format(
        "a budget of {} cannot hold the largest node and its inputs{}: no schedule needs less than {}",
        format_bytes_exact(o.ram_budget_bytes), fixed_bytes > 0 ? " besides the fixed memory" : "",
        format_bytes_exact(needed));
    return result;
  }

  const milp::MilpModel model(g, costs, o, o.ram_budget_bytes - fixed_bytes);
  result.variables = model.columns();
  result.constraints = model.rows();
  if (!o.write_model_path.empty()) milp::write_model(model, o.write_model_path);
  // Checkpoint-all is a valid start whenever it fits: CBC then only has to improve on it.
  const std::vector<double> start = model.assignment(checkpoint_all_schedule(g));
  const bool use_start = satisfies(model, start);
  // Every node is computed at least once, so compute-once energy (or time) is a lower
  // bound; a start that fits and reaches it is optimal without asking CBC.
  milp::CbcOutcome cbc;
  double start_objective = 0;
  for (int c = 0; c < model.columns(); ++c) start_objective += model.objective()[c] * start[static_cast<std::size_t>(c)];
  double lower_bound = 0;
  for (int c = 0; c < model.columns(); ++c)
    if (model.lower()[c] > 0) lower_bound += model.objective()[c] * model.lower()[c];
  if (use_start && start_objective <= lower_bound * (1 + 1e-12)) {
    cbc.solution = start;
    cbc.objective = start_objective;
    cbc.bound = lower_bound;
    cbc.proven_optimal = true;
  } else {
    const milp::GuardedOutcome guarded = milp::run_cbc_guarded(model, o, use_start ? &start : nullptr);
    cbc = guarded.outcome;
    // An infeasibility claimed at the time limit is not a proof.
    if (guarded.timed_out || cbc.seconds >= o.time_limit_s) cbc.proven_infeasible = false;
  }
  result.solve_time_s = cbc.seconds;
  result.nodes = cbc.nodes;
  result.best_bound = cbc.bound * model.objective_scale();
  if (!cbc.solution) {
    result.status = cbc.proven_infeasible ? SolveStatus::Infeasible : SolveStatus::NoSolution;
    result.message = cbc.proven_infeasible ? "CBC proved that no schedule meets the budget and the deadline"
                                           : fmt::format("CBC found no schedule within the {:.0f} s limit; give it more "
                                                         "time (--time-limit) or a larger budget",
                                                         o.time_limit_s);
    return result;
  }
  result.milp_objective_j = cbc.objective * model.objective_scale();
  result.best_bound = std::min(result.best_bound, result.milp_objective_j);
  result.gap = result.milp_objective_j > 0 ? (result.milp_objective_j - result.best_bound) / result.milp_objective_j : 0;
  result.status = cbc.proven_optimal || result.gap <= o.relative_gap ? SolveStatus::Optimal : SolveStatus::Feasible;
  result.schedule = model.schedule(*cbc.solution);

  // The simulator judges the schedule; its figures are the ones reported.
  SimulationOptions sim;
  sim.count_parameters = strict;
  sim.count_gradients = strict && o.count_gradients;
  sim.optimizer = o.optimizer;
  if (strict) sim.ram_budget_bytes = o.ram_budget_bytes;
  const Plan plan = plan_from_schedule(*result.schedule, g);
  try {
    result.simulation = simulate(g, costs, plan, sim);
  } catch (const InvalidPlan& e) {
    // The MILP counts memory per stage; the simulator also counts transfers in flight.
    result.status = SolveStatus::NoSolution;
    result.message = fmt::format("the optimizer's schedule fails in the simulator: {}", e.what());
    return result;
  }
  if (o.objective == SolveObjective::Energy) {
    const double simulated = result.simulation->total_energy_j();
    POET_CHECK(std::fabs(simulated - result.milp_objective_j) <= 1e-6 * std::max(1.0, std::fabs(simulated)),
               fmt::format("the MILP's objective {} J and the simulator's energy {} J disagree", result.milp_objective_j,
                           simulated));
  }
  return result;
}

}  // namespace poet
