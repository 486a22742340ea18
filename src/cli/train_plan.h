// How `poet train` gets its plan: a RAM budget resolved against the training graph, a
// strategy's schedule for it, the transfer planner, and the static memory plan the
// executor runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/runtime/executor.h"
#include "poet/simulate/simulator.h"

namespace poet::cli {

const std::vector<std::string>& train_strategy_names();

struct TrainPlan {
  runtime::ExecutablePlan executable;
  SimulationResult simulation;  // of the plan, on the platform: the predicted step
  std::int64_t budget_bytes = 0;
  std::string detail;  // what the strategy chose or how the solve went
};

// Throws InputError naming the smallest workable budget (bytes and percent) when the
// budget is below what any schedule needs, and ExitWith{kExitNoSchedule} after printing
// the reason when the strategy finds no schedule within the budget.
TrainPlan plan_training(const Graph& g, const GraphCosts& costs, const std::string& strategy,
                        const std::string& ram_budget, double time_limit_s, bool quiet);

}  // namespace poet::cli
