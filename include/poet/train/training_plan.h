// How a training run gets its plan: a strategy's schedule for a RAM budget, the transfer
// planner, and the static memory plan the executor runs. The simulator's figures for the
// plan are the prediction a measured step is held to.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/lower/lower.h"

namespace poet::train {

struct PlanRequest {
  std::string strategy = "poet";  // any of strategy.h's
  std::int64_t budget_bytes = 0;  // parameters + activations, as the simulator counts them
  double time_limit_s = 60;       // of the poet solve
  bool progress = false;          // the poet solve's progress lines on stderr
};

struct TrainingPlan {
  LoweredPlan lowered;          // its simulation is the predicted step
  std::int64_t budget_bytes = 0;
  std::string detail;           // what the strategy chose or how the solve went
  // Empty, or the lower budget a replan made the arena fit in, or why the arena exceeds the budget.
  std::string note;
};

// No schedule within the budget; what() says why. Below the smallest workable budget no
// strategy finds one (another_strategy_may_help false): what() names the budget that is.
class NoSchedule : public std::runtime_error {
 public:
  explicit NoSchedule(const std::string& what, bool another_strategy_may_help = true)
      : std::runtime_error(what), another_strategy_may_help(another_strategy_may_help) {}
  bool another_strategy_may_help;
};

// Throws NoSchedule when the budget is below what any schedule needs (naming the smallest
// workable budget, in bytes and percent of the activation peak) or the strategy finds none
// within it; InputError for an unknown strategy (strategy.h).
TrainingPlan plan_training(const Graph& g, const GraphCosts& costs, const PlanRequest& request);

}  // namespace poet::train
