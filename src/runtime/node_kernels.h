// One training-graph node, evaluated: maps a node's operator and role (forward, loss,
// input gradient, parameter gradient, accumulation) to the kernel calls of kernels_*.h.
// The executor resolves where every tensor lives; this file only knows the math.
#pragma once

#include <cstdint>
#include <span>

#include "poet/graph/graph.h"
#include "poet/runtime/parameters.h"

namespace poet::runtime::detail {

// What a node reads and writes besides its input and output tensors.
struct StepContext {
  ParameterStore* parameters = nullptr;
  std::span<const float> input_batch;   // copied into the arena by Input nodes
  std::span<const std::int32_t> labels; // one per row of the loss
  std::span<float> scratch;             // at least max scratch_elements over the graph
  std::uint64_t seed = 0, step = 0;     // dropout masks: (seed, step, forward node)
  float loss = 0;                       // set by the loss node
  std::int64_t correct = 0;             // rows whose most probable class is the label
};

// Throws InputError naming the node if the runtime has no kernel for it (the reference's
// fused ops, `chain` gradients) or if its shapes do not fit its kernel.
void check_runnable(const Graph& g, NodeId v);

// Floats of scratch the node's kernel needs (im2col buffers of convolutions).
std::int64_t scratch_elements(const Graph& g, NodeId v);

// Evaluates node v. `inputs[i]` is the tensor of g.node(v).inputs[i]; `out` its output
// (empty for a parameter gradient, which goes to ctx.parameters). Allocates nothing.
void run_node(const Graph& g, NodeId v, std::span<float> out, std::span<const std::span<float>> inputs,
              StepContext& ctx);

}  // namespace poet::runtime::detail
