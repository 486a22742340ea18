// Predicted against measured: the simulator's step time for a strategy's plan at a budget
// beside the time real training steps of that plan take on this machine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/train/step_timing.h"

namespace poet::train {

struct PredictionRow {
  std::string model, strategy, budget;  // budget as asked ("70%", "3MB")
  std::int64_t budget_bytes = 0;
  // Filled when the strategy found a plan and it ran; otherwise `note` says why not.
  bool ran = false;
  int recomputes = 0, pageouts = 0;
  std::size_t bytes_paged_per_step = 0;  // out + in, as run
  // The simulator's makespan of the plan; with node times taken alongside the steps, made
  // from them, plus the optimizer update timed with them.
  double predicted_s = 0;
  double measured_s = 0, spread_s = 0;   // median step and its interquartile range
  // Time the step waits for transfers: the simulator's stall, and the executor's as run
  // (Executor::stall_seconds, median over the steps).
  double predicted_stall_s = 0, measured_stall_s = 0;
  // The time storage is busy with a step's transfers: the simulator's, from the profile's
  // storage figures (SimulationResult::transfer_time_s), and as run (StepTiming). Where a
  // paging plan runs slower than predicted, this tells a storage slower than profiled from
  // a wrong model.
  double predicted_storage_s = 0, measured_storage_s = 0;
  double cpu_share = 0;                  // StepTiming::cpu_share
  int steps = 0;
  std::string note;

  // (measured - predicted) / predicted.
  double relative_error() const { return (measured_s - predicted_s) / predicted_s; }
};

struct BudgetPoint {
  std::string label;  // as asked: "70%", "3MB"
  std::int64_t bytes = 0;
};

struct PredictionRequest {
  std::vector<std::string> strategies;  // strategy_names()
  std::vector<BudgetPoint> budgets;
  double time_limit_s = 60;  // of each poet solve
  StepTimingOptions timing;
  // A step's optimizer update (MeasuredNodes::update_s), added to each plan's makespan;
  // with timing.time_nodes_alongside the update timed beside the steps is added instead.
  double update_s = 0;
};

// Called as plans are made ("planning") and as steps run ("steps"): (phase, done, total,
// what is being done).
using PredictionProgress = std::function<void(const std::string&, int, int, const std::string&)>;

// Plans every strategy at every budget (budget-major), then times the plans side by side
// (time_training_steps). A strategy without a plan at a budget gives a row whose note says
// why. `costs` should be a profile of this machine for `g`: otherwise the prediction is of
// another device.
std::vector<PredictionRow> predict_and_measure(const Graph& g, const GraphCosts& costs,
                                               const PredictionRequest& request,
                                               const PredictionProgress& progress = {});

}  // namespace poet::train
