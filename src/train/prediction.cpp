#include "poet/train/prediction.h"

#include <fmt/format.h>

#include <optional>

#include "poet/train/training_plan.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet::train {
namespace {

// The plan of the row's strategy at its budget with its predicted figures in the row, or
// nullopt with the reason in the row's note.
std::optional<TrainingPlan> plan_row(const Graph& g, const GraphCosts& costs, const PredictionRequest& request,
                                     PredictionRow& row) {
  try {
    TrainingPlan plan = plan_training(
        g, costs, {.strategy = row.strategy, .budget_bytes = row.budget_bytes, .time_limit_s = request.time_limit_s, .progress = false});
    row.recomputes = plan.lowered.simulation.recomputes;
    row.pageouts = plan.lowered.simulation.pageouts;
    row.predicted_s = plan.lowered.simulation.makespan_s + request.update_s;
    row.predicted_stall_s = plan.lowered.simulation.stall_s;
    row.predicted_storage_s = plan.lowered.simulation.transfer_time_s;
    row.note = plan.note;
    return plan;
  } catch (const NoSchedule& e) {
    row.note = fmt::format("no plan: {}", e.what());
  } catch (const InputError& e) {  // below the smallest workable budget
    row.note = fmt::format("no plan: {}", e.what());
  } catch (const InternalError& e) {
    // A bug in one strategy's planning (it says so) is reported in its row; the other
    // plans are still run and measured.
    row.note = fmt::format("no plan: {}", e.what());
  }
  return std::nullopt;
}

}  // namespace

std::vector<PredictionRow> predict_and_measure(const Graph& g, const GraphCosts& costs,
                                               const PredictionRequest& request, const PredictionProgress& progress) {
  std::vector<PredictionRow> rows;
  std::vector<TrainingPlan> plans;
  std::vector<std::size_t> planned_rows;
  const auto total = static_cast<int>(request.budgets.size() * request.strategies.size());
  for (const BudgetPoint& budget : request.budgets)
    for (const std::string& strategy : request.strategies) {
      if (progress)
        progress("planning", static_cast<int>(rows.size()), total, fmt::format("{} at {}", strategy, budget.label));
      PredictionRow& row = rows.emplace_back();
      row.model = g.name();
      row.strategy = strategy;
      row.budget = budget.label;
      row.budget_bytes = budget.bytes;
      if (auto plan = plan_row(g, costs, request, row)) {
        plans.push_back(std::move(*plan));
        planned_rows.push_back(rows.size() - 1);
      }
    }
  if (progress) progress("planning", total, total, counted(plans.size(), "plan"));

  std::vector<const LoweredPlan*> executables;
  for (const TrainingPlan& p : plans) executables.push_back(&p.lowered);
  const SideBySideTiming timings = time_training_steps(g, executables, request.timing, [&](int done, int rounds) {
    if (progress) progress("steps", done, rounds, "a turn of each plan");
  });
  // With node times taken alongside the steps, the prediction is remade from them: the
  // same plans, costed as the machine ran while it stepped them.
  GraphCosts alongside = costs;
  for (std::size_t v = 0; v < timings.node_seconds.size(); ++v) alongside.nodes[v].compute_time_s = timings.node_seconds[v];
  for (std::size_t k = 0; k < timings.plans.size(); ++k) {
    PredictionRow& row = rows[planned_rows[k]];
    const StepTiming& t = timings.plans[k];
    row.ran = true;
    if (!timings.node_seconds.empty()) {
      SimulationOptions budgeted;
      budgeted.ram_budget_bytes = plans[k].budget_bytes;
      // A step is its plan's instructions, which the simulator times, then the optimizer's
      // update, the same for every plan.
      const SimulationResult sim = simulate_for_budget(g, alongside, plans[k].lowered.plan, budgeted);
      row.predicted_s = sim.makespan_s + timings.update_seconds;
      row.predicted_stall_s = sim.stall_s;
    }
    row.bytes_paged_per_step = t.bytes_paged_out + t.bytes_paged_in;
    row.measured_s = t.median_s;
    row.spread_s = t.spread_s;
    row.measured_stall_s = t.stall_s;
    row.measured_storage_s = t.storage_busy_s;
    row.cpu_share = t.cpu_share;
    row.steps = t.steps;
  }
  return rows;
}

}  // namespace poet::train
