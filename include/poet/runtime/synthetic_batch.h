// A seeded synthetic batch for a training graph: what the profiler and the step timings
// run, where the values do not matter but must be ordinary numbers (no NaNs or denormals
// to skew a kernel's time).
#pragma once

#include <cstdint>
#include <vector>

#include "poet/graph/graph.h"

namespace poet::runtime {

struct SyntheticBatch {
  std::vector<float> inputs;          // the Input node's elements
  std::vector<std::int32_t> labels;   // one per row of the loss
};

// Inputs uniform in [0, 1), or token ids below the vocabulary (their bits, as the
// embedding reads them) for a graph that takes tokens; labels cycling through the classes.
// `g` is a training graph the Executor accepts (one Input node, a loss).
SyntheticBatch synthetic_batch(const Graph& g, std::uint64_t seed);

}  // namespace poet::runtime
