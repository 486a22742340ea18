// One training-graph node, evaluated: a node's operator and role (forward, loss, input
// gradient, parameter gradient, accumulation) pick its kernel in the runtime's operator
// table (op_kernels.h). The executor resolves where every tensor lives; this file only
// knows which kernel runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

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
  // Evaluation, as model.eval(): batch-norm statistics nodes give the running statistics
  // of their norm (batch_norm_owners) instead of the batch's, and dropout is the identity.
  bool inference = false;
  std::span<const NodeId> batch_norm_owner = {};  // batch_norm_owners(g), read in inference
  float loss = 0;                       // set by the loss node
  std::int64_t correct = 0;             // rows whose most probable class is the label
};

// Throws InputError naming the node if the runtime has no kernel for it (the reference's
// fused ops, `chain` gradients) or if its shapes do not fit its kernel.
void check_runnable(const Graph& g, NodeId v);

// Throws InputError unless g is a valid training graph the runtime can run: backward nodes,
// fp32 everywhere but masks and indices (op_table.h's stored_element_bytes), a kernel for
// every node (check_runnable), exactly one Input node.
// Returns the Input node, which the runtime feeds the batch into.
NodeId check_trainable(const Graph& g);

// Floats of scratch the node's kernel needs (im2col buffers of convolutions).
std::int64_t scratch_elements(const Graph& g, NodeId v);
// The most any node of g needs: the scratch a step allocates once.
std::int64_t scratch_elements(const Graph& g);

// Per node of g: for a BatchNormStats node, the BatchNorm2d node that reads it and keeps
// the running statistics inference normalizes with; -1 for every other node.
std::vector<NodeId> batch_norm_owners(const Graph& g);

// Evaluates node v. `inputs[i]` is the tensor of g.node(v).inputs[i]; `out` its output
// (empty for a parameter gradient, which goes to ctx.parameters). Allocates nothing.
void run_node(const Graph& g, NodeId v, std::span<float> out, std::span<const std::span<float>> inputs,
              StepContext& ctx);

}  // namespace poet::runtime::detail
