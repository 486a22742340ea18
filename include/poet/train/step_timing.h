// Times real training steps of plans: what a measured step is, to hold the simulator's
// prediction to.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "poet/graph/graph.h"
#include "poet/profile/profiling.h"
#include "poet/runtime/executor.h"

namespace poet::train {

struct StepTimingOptions {
  int warmup_steps = 3;  // untimed: first touches of the arena, the BLAS's buffers, the page file
  int steps = 20;        // timed, per plan
  // The plans take turns of this many consecutive steps each, only the last timed (why:
  // profile::kStepsPerTurn). At least 1.
  int steps_per_turn = profile::kStepsPerTurn;
  // Where paged tensors go (FilePagerOptions::path): empty is the working folder.
  std::string page_dir;
  // O_DIRECT where the file system has it, as `poet profile` measures storage by default.
  bool direct_io = true;
  std::uint64_t seed = 0;  // weights and the synthetic batch
  // Also time the graph's nodes in one checkpoint-all step (as `poet profile` does,
  // StepNodeTimer) in every round, before the plans' steps: node times taken alongside the
  // steps, so that a prediction made from them and the measured steps see the same machine,
  // however its speed drifts.
  bool time_nodes_alongside = false;
};

struct StepTiming {
  double median_s = 0;
  double spread_s = 0;  // interquartile range of the timed steps
  // Median over the steps of the stepping thread's CPU time over wall time: near 1 when it
  // had a core to itself, lower when other processes took turns on it (or it waited for
  // paging) - what tells a slow machine from a wrong prediction.
  double cpu_share = 0;
  double stall_s = 0;  // median over the steps of Executor::stall_seconds
  int steps = 0;
  std::size_t bytes_paged_out = 0, bytes_paged_in = 0;  // per step
  double storage_busy_s = 0;  // per step: Pager::seconds_storage_busy
  std::int64_t peak_live_bytes = 0;                     // of activations, as run
};

struct SideBySideTiming {
  std::vector<StepTiming> plans;      // one per plan, in order
  std::vector<double> node_seconds;   // per node, the median of the rounds; empty unless asked
  double update_seconds = 0;          // a step's optimizer update, the median of the rounds; with node_seconds
};

// Runs warm-up then timed training steps of each plan of `g` on one synthetic batch
// (uniform inputs, labels cycling through the classes: a step's time does not depend on
// the values), paging to a real file where a plan pages. The plans take turns
// (StepTimingOptions::steps_per_turn), so that a machine whose load changes during the run
// slows them alike and their times compare side by side. Throws what the executor and pager
// throw. `progress` is called after each round with (rounds done, rounds).
SideBySideTiming time_training_steps(const Graph& g, std::span<const LoweredPlan* const> plans,
                                            const StepTimingOptions& options,
                                            const std::function<void(int, int)>& progress = {});

}  // namespace poet::train
