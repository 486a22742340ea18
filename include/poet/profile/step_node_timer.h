// Node times as a training step meets them: what `poet profile` measures and what the
// step-time predictions are made from.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "poet/graph/graph.h"

namespace poet::profile {

// Runs real training steps of a graph's checkpoint-all plan through the runtime's Executor,
// timing every Compute instruction (ExecutorOptions::time_computes), on one seeded
// synthetic batch. Each node is then timed where a step runs it: its output written to
// arena bytes just freed, its inputs just made, the kernels' scratch shared. Timing the
// nodes outside a step, each output in memory of its own (all of them held at once, 38 MiB
// against a step's 11 MiB arena for resnet18_cifar at batch 8), summed 10% above the
// steps they predicted, on every plan (docs/BENCHMARKS.md, nineteenth session).
class StepNodeTimer {
 public:
  // Throws InputError, as the Executor does, for a graph it cannot run.
  explicit StepNodeTimer(const Graph& g, std::uint64_t seed = 0);
  ~StepNodeTimer();
  StepNodeTimer(const StepNodeTimer&) = delete;
  StepNodeTimer& operator=(const StepNodeTimer&) = delete;

  // One step: appends each node's compute time in it to samples[v] (one list per node),
  // and the time the step's optimizer update took (after its instructions) to `updates`
  // when given; returns the step's loss. Then puts the weights and the step count back as
  // they were, so that every step computes the same values: no drift towards the tiny
  // gradients of a memorized batch, the same dropout masks.
  float time_step(std::vector<std::vector<double>>& samples, std::vector<double>* updates = nullptr);

  const Graph& graph() const;
  // Bytes held: the checkpoint-all arena, parameters, gradients and the weights' copy.
  std::int64_t bytes_held() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace poet::profile
