// Batch-norm running statistics, updated exactly once per step. A plan may compute a
// statistics node several times (recomputation); the first result in a step is kept
// aside and committed after the backward, with the optimizer's update, so a recomputation
// does not count twice and a step that fails changes nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "poet/graph/graph.h"
#include "poet/kernels/kernel_shapes.h"
#include "poet/runtime/parameters.h"

namespace poet::runtime::detail {

class RunningStatistics {
 public:
  explicit RunningStatistics(const Graph& g);
  void begin_step();
  // Keeps `stats` if v is a batch-norm statistics node seen for the first time this step.
  void capture(NodeId v, std::span<const float> stats);
  // running = (1 - momentum) running + momentum batch, for every batch norm (its node's
  // momentum: PyTorch's 0.1 unless an imported model says otherwise).
  void commit(ParameterStore& parameters) const;

 private:
  struct Norm {
    NodeId norm = -1;         // the BatchNorm2d node, owner of the running statistics
    std::int64_t offset = 0;  // of its captured statistics, 2 floats per channel
    kernels::BatchNormShape shape;
    float momentum = 0.1f;
  };
  std::vector<Norm> norms_;
  std::vector<std::int32_t> norm_of_stats_;  // per node: index into norms_, or -1
  std::vector<float> captured_;
  std::vector<std::uint8_t> seen_;           // per norm, this step
};

}  // namespace poet::runtime::detail
