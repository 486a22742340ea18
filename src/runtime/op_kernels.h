// The runtime's half of the operator table (poet/graph/op_table.h): the kernels bound to
// each operator, keyed by OpKind, as TensorFlow Lite Micro registers one struct of function
// pointers per operator. node_kernels.cpp dispatches every node through it; the bindings
// live in op_kernels_<family>.cpp and turn a node's shapes and attributes into the kernel
// calls of kernels_*.h, and lay out the parameters of ops that own some (ParameterStore).
// Plain function pointers: a step allocates nothing to dispatch.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "node_kernels.h"
#include "poet/kernels/kernel_shapes.h"
#include "poet/util/error.h"

namespace poet::runtime::detail {

// The input tensors of one node, found by position or by the node that produced them.
class Inputs {
 public:
  Inputs(const Node& n, std::span<const std::span<float>> tensors) : node_(n), tensors_(tensors) {}
  std::span<const float> at(std::size_t i) const { return tensors_[i]; }
  std::span<const float> of(NodeId id) const;

 private:
  const Node& node_;
  std::span<const std::span<float>> tensors_;
};

// What a kernel binding sees: the forward node it evaluates or differentiates, and the
// tensors of the node being run.
struct KernelCall {
  const Graph& g;
  NodeId forward_id;  // the node run, or for a gradient the forward node it differentiates
  const Node& forward;
  const Node& node;  // the node run
  const Inputs& in;
  StepContext& ctx;

  // A gradient node's copies of the forward node's tensors: input `slot` and the output.
  std::span<const float> forward_input(int slot) const { return in.of(forward.inputs.at(slot)); }
  std::span<const float> forward_output() const { return in.of(forward_id); }
  // The parameters of the forward node (its slice of the parameter store).
  std::span<const float> parameters() const { return ctx.parameters->values(forward_id); }
  // A gradient node's copy of what the forward node keeps for it (op_table.h's
  // SavedForBackward), which autodiff lists last; and that node.
  std::span<const float> saved() const { return in.at(node.inputs.size() - 1); }
  const Node& saved_node() const { return g.node(node.inputs.back()); }
};

// A tensor of `count` elements of T (mask bytes, indices) in the floats the executor gives
// every tensor as, which it rounds up to hold them.
template <typename T>
std::span<T> stored_as(std::span<float> t, std::int64_t count) {
  POET_CHECK(static_cast<std::int64_t>(t.size_bytes()) >= count * static_cast<std::int64_t>(sizeof(T)),
             "a tensor smaller than its elements");
  return {reinterpret_cast<T*>(t.data()), static_cast<std::size_t>(count)};
}
template <typename T>
std::span<const T> stored_as(std::span<const float> t, std::int64_t count) {
  POET_CHECK(static_cast<std::int64_t>(t.size_bytes()) >= count * static_cast<std::int64_t>(sizeof(T)),
             "a tensor smaller than its elements");
  return {reinterpret_cast<const T*>(t.data()), static_cast<std::size_t>(count)};
}

// How an operator with parameters lays them out and starts them: `count` floats, the
// leading `trainable` of them updated by the optimizer (and the size of the gradient); the
// leading `weights` start uniform in +-bound, the pieces in `ones` (a norm's scale, batch
// norm's running variance) at 1, the rest at `fill`: 0 (biases, shifts, running means), or
// PReLU's slopes at torch's 0.25.
struct ParameterLayout {
  std::int64_t count = 0;
  std::int64_t trainable = 0;
  std::int64_t weights = 0;
  float bound = 0;
  struct Ones {
    std::int64_t begin = 0, length = 0;
  };
  std::array<Ones, 2> ones = {};
  float fill = 0;
};

struct OpKernels {
  void (*forward)(const KernelCall& call, std::span<float> y) = nullptr;
  // The gradient of input slot call.node.grad.slot; dy is empty for the loss, whose
  // gradient starts the backward pass.
  void (*input_gradient)(const KernelCall& call, std::span<const float> dy, std::span<float> dx) = nullptr;
  void (*parameter_gradient)(const KernelCall& call, std::span<const float> dy, std::span<float> grad) = nullptr;
  int gradient_slots = 1;  // input slots input_gradient differentiates
  // The kernels' own shape checks of forward node f, run once before any step (InputError).
  void (*validate)(const Graph& g, const Node& f) = nullptr;
  // Floats of scratch the kernels of f need (im2col buffers of convolutions); null: none.
  std::int64_t (*scratch)(const Graph& g, const Node& f) = nullptr;
  // The layout of f's parameters (ParameterStore); null: the op owns none.
  ParameterLayout (*parameters)(const Graph& g, const Node& f) = nullptr;
};

// The kernels of `op`: an entry of null pointers for an operator the runtime cannot run.
const OpKernels& op_kernels(OpKind op);

// Shared by the bindings.
const Shape& input_shape(const Graph& g, const Node& f, int slot = 0);
kernels::RowsShape rows_shape(const Shape& s);  // [rows..., cols]
void copy(std::span<const float> from, std::span<float> to);
// A parameter slice [weights, then `tail` floats of bias or shift], split in two.
struct SplitParams {
  std::span<const float> head, tail;
};
SplitParams split_tail(std::span<const float> p, std::size_t tail);
struct SplitGradient {
  std::span<float> head, tail;
};
SplitGradient split_tail(std::span<float> p, std::size_t tail);
// Weights and biases: `weights` floats uniform in +-sqrt(6 / fan_in) (He et al. 2015, for
// ReLU networks), then `biases` zeros.
ParameterLayout he_uniform(std::int64_t weights, std::int64_t biases, std::int64_t fan_in);
// A learned tensor that is neither a weight nor a bias (a position embedding, a class
// token): every value trained, starting uniform in +-0.02 (ViT starts them near 0).
ParameterLayout small_learned_tensor(const Graph& g, const Node& f);

}  // namespace poet::runtime::detail
