// Kernel bindings of the element-wise operators, softmax over the last axis, and the loss.
#include <fmt/format.h>

#include <algorithm>

#include "op_kernel_defs.h"
#include "poet/kernels/kernels.h"
#include "poet/util/error.h"

namespace poet::runtime::detail::bind {

using namespace kernels;  // the kernels this file binds to operators
namespace {

using Unary = void (*)(std::span<const float>, std::span<float>);
using UnaryBackward = void (*)(std::span<const float> dy, std::span<const float> saved, std::span<float> dx);

// An activation y = fwd(x) whose gradient bwd(dy, saved) reads the forward node's output
// (tanh, sigmoid) or, when ReadsInput, its input (gelu).
template <Unary fwd, UnaryBackward bwd, bool ReadsInput = false>
OpKernels activation() {
  return {.forward = [](const KernelCall& c, std::span<float> y) { fwd(c.in.at(0), y); },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            bwd(dy, ReadsInput ? c.forward_input(0) : c.forward_output(), dx);
          }};
}

using ScaledUnary = void (*)(float, std::span<const float>, std::span<float>);
using ScaledUnaryBackward = void (*)(float, std::span<const float> dy, std::span<const float> y, std::span<float> dx);

// An activation with a parameter in attrs.scale (leaky ReLU's slope, ELU's alpha), whose
// gradient reads the output.
template <ScaledUnary fwd, ScaledUnaryBackward bwd>
OpKernels activation_of_scale() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            fwd(static_cast<float>(c.forward.attrs.scale), c.in.at(0), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            bwd(static_cast<float>(c.forward.attrs.scale), dy, c.forward_output(), dx);
          }};
}

// ReLU and ReLU6: the gradient reads the 1-bit mask of the output (relu_mask).
template <Unary fwd>
OpKernels masked_activation() {
  return {.forward = [](const KernelCall& c, std::span<float> y) { fwd(c.in.at(0), y); },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            masked_backward(dy, stored_as<std::uint8_t>(c.saved(), mask_bytes(std::ssize(dy))), dx);
          }};
}

std::int64_t count_correct(const RowsShape& s, std::span<const float> probabilities,
                           std::span<const std::int32_t> labels) {
  std::int64_t correct = 0;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const float* row = probabilities.data() + r * s.cols;
    const std::int64_t best = std::max_element(row, row + s.cols) - row;  // the first maximum
    correct += best == labels[static_cast<std::size_t>(r)];
  }
  return correct;
}

void validate_rows(const Graph&, const Node& f) { validate(rows_shape(f.shape)); }

// The dropout mask of forward node f in this step.
RandomKey dropout_key(const KernelCall& c) {
  return {c.ctx.seed, c.ctx.step, static_cast<std::uint32_t>(c.forward_id)};
}
float dropout_p(const KernelCall& c) { return static_cast<float>(c.forward.attrs.dropout_p); }

}  // namespace

OpKernels relu() { return masked_activation<relu_forward>(); }
OpKernels relu6() { return masked_activation<relu6_forward>(); }
OpKernels relu_mask() {
  return {.forward = [](const KernelCall& c, std::span<float> out) {
            const std::span<const float> y = c.in.at(0);
            const auto mask = stored_as<std::uint8_t>(out, mask_bytes(std::ssize(y)));
            (c.g.node(c.node.inputs.at(0)).op == OpKind::ReLU6 ? kernels::relu6_mask : kernels::relu_mask)(y, mask);
          },
          .validate = [](const Graph& g, const Node& f) {
            const OpKind of = g.node(f.inputs.at(0)).op;
            if (of != OpKind::ReLU && of != OpKind::ReLU6)
              throw InputError(fmt::format("relu_mask reads a '{}' node; it keeps the gradient mask of relu or relu6",
                                           op_name(of)));
          }};
}
OpKernels tanh() { return activation<tanh_forward, tanh_backward>(); }
OpKernels sigmoid() { return activation<sigmoid_forward, sigmoid_backward>(); }
OpKernels gelu() { return activation<gelu_forward, gelu_backward, /*ReadsInput=*/true>(); }

OpKernels gelu_erf() { return activation<gelu_erf_forward, gelu_erf_backward, /*ReadsInput=*/true>(); }

OpKernels scale() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            const OpAttrs& a = c.forward.attrs;
            scale_shift_forward(static_cast<float>(a.scale), static_cast<float>(a.shift), c.in.at(0), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            scale_forward(static_cast<float>(c.forward.attrs.scale), dy, dx);
          }};
}

// The input's gradient flows through (dY itself); the parameter's sums dY over the repeats.
OpKernels add_parameter() {
  return {.forward = [](const KernelCall& c, std::span<float> y) { add_parameter_forward(c.in.at(0), c.parameters(), y); },
          .parameter_gradient = [](const KernelCall&, std::span<const float> dy,
                                   std::span<float> grad) { add_parameter_backward(dy, grad); },
          .parameters = small_learned_tensor};
}

OpKernels hard_sigmoid() { return activation<hard_sigmoid_forward, hard_sigmoid_backward>(); }
OpKernels elu() { return activation_of_scale<elu_forward, elu_backward>(); }
OpKernels softplus() { return activation<softplus_forward, softplus_backward, /*ReadsInput=*/true>(); }
OpKernels leaky_relu() { return activation_of_scale<leaky_relu_forward, leaky_relu_backward>(); }
OpKernels hard_swish() { return activation<hard_swish_forward, hard_swish_backward, /*ReadsInput=*/true>(); }

namespace {

// a by b, b broadcast over a (mul's second input, or mul_parameter's parameters).
BroadcastShape broadcast_shape(const Shape& a, const Shape& b) {
  if (a.size() != b.size() || a.size() > static_cast<std::size_t>(kMaxPermuteRank))
    throw InputError(fmt::format("mul, div: the runtime broadcasts over tensors of one rank up to {}, not {} and {}",
                                 kMaxPermuteRank, shape_string(a), shape_string(b)));
  BroadcastShape s;
  s.rank = static_cast<int>(a.size());
  std::copy(a.begin(), a.end(), s.dims.begin());
  std::copy(b.begin(), b.end(), s.b_dims.begin());
  return s;
}

BroadcastShape broadcast_shape(const Graph& g, const Node& f) {
  return broadcast_shape(input_shape(g, f, 0), input_shape(g, f, 1));
}
BroadcastShape parameter_broadcast(const Graph& g, const Node& f) { return broadcast_shape(input_shape(g, f), f.attrs.dims); }

}  // namespace

// x's gradient reads the parameters; theirs reads x. From scratch the parameters start at
// 1, the identity (a file's values replace them on import).
OpKernels mul_parameter() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            mul_forward(parameter_broadcast(c.g, c.forward), c.in.at(0), c.parameters(), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            mul_backward_a(parameter_broadcast(c.g, c.forward), dy, c.parameters(), dx);
          },
          .parameter_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> grad) {
            mul_backward_b(parameter_broadcast(c.g, c.forward), dy, c.forward_input(0), grad);
          },
          .validate = [](const Graph& g, const Node& f) { validate(parameter_broadcast(g, f)); },
          .parameters = [](const Graph&, const Node& f) {
            return ParameterLayout{.count = f.param_count, .trainable = f.param_count,
                                   .ones = {ParameterLayout::Ones{.begin = 0, .length = f.param_count}}};
          }};
}

// Both gradients read x. From scratch every slope starts at torch's 0.25.
OpKernels prelu() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            prelu_forward(parameter_broadcast(c.g, c.forward), c.in.at(0), c.parameters(), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            prelu_backward_input(parameter_broadcast(c.g, c.forward), dy, c.forward_input(0), c.parameters(), dx);
          },
          .parameter_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> grad) {
            prelu_backward_slope(parameter_broadcast(c.g, c.forward), dy, c.forward_input(0), grad);
          },
          .validate = [](const Graph& g, const Node& f) { validate(parameter_broadcast(g, f)); },
          .parameters = [](const Graph&, const Node& f) {
            return ParameterLayout{.count = f.param_count, .trainable = f.param_count, .fill = 0.25f};
          }};
}

// c is the node's parameters, none trained; x's gradient flows through (no kernel).
OpKernels add_constant() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            add_broadcast_forward(parameter_broadcast(c.g, c.forward), c.in.at(0), c.parameters(), y);
          },
          .validate = [](const Graph& g, const Node& f) { validate(parameter_broadcast(g, f)); },
          .parameters = [](const Graph&, const Node& f) { return ParameterLayout{.count = f.param_count}; }};
}

// The table, then the fixed indices (from scratch: the table small, every index 0).
OpKernels add_gathered() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            const std::size_t indices = static_cast<std::size_t>(element_count(c.forward.attrs.dims));
            const SplitParams p = split_tail(c.parameters(), indices);
            add_gathered_forward(parameter_broadcast(c.g, c.forward), c.in.at(0), p.head, p.tail, y);
          },
          .parameter_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> grad) {
            const std::size_t indices = static_cast<std::size_t>(element_count(c.forward.attrs.dims));
            add_gathered_backward(parameter_broadcast(c.g, c.forward), dy, split_tail(c.parameters(), indices).tail,
                                  grad);
          },
          .validate = [](const Graph& g, const Node& f) { validate(parameter_broadcast(g, f)); },
          .parameters = [](const Graph&, const Node& f) {
            const std::int64_t table = f.param_count - element_count(f.attrs.dims);
            return ParameterLayout{.count = f.param_count, .trainable = table, .weights = table, .bound = 0.02f};
          }};
}

namespace {

using BroadcastKernel = void (*)(const BroadcastShape& s, std::span<const float> a_or_dy, std::span<const float> b,
                                 std::span<float> out);
using BroadcastGradientB = void (*)(const KernelCall& c, const BroadcastShape& s, std::span<const float> dy,
                                    std::span<float> db);

// a (op) b, b broadcast over a: the forward, the gradient of a (which reads b) and that of
// b (which reads what `grad_b` takes from the call).
template <BroadcastKernel forward, BroadcastKernel grad_a, BroadcastGradientB grad_b>
OpKernels broadcast_operator() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            forward(broadcast_shape(c.g, c.forward), c.in.at(0), c.in.at(1), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            const BroadcastShape s = broadcast_shape(c.g, c.forward);
            if (c.node.grad.slot == 0) return grad_a(s, dy, c.forward_input(1), dx);
            grad_b(c, s, dy, dx);
          },
          .gradient_slots = 2,
          .validate = [](const Graph& g, const Node& f) { validate(broadcast_shape(g, f)); }};
}

// Of mul, b's gradient reads a; of div, a and b.
void mul_gradient_b(const KernelCall& c, const BroadcastShape& s, std::span<const float> dy, std::span<float> db) {
  mul_backward_b(s, dy, c.forward_input(0), db);
}
void div_gradient_b(const KernelCall& c, const BroadcastShape& s, std::span<const float> dy, std::span<float> db) {
  div_backward_b(s, dy, c.forward_input(0), c.forward_input(1), db);
}

}  // namespace

OpKernels mul() { return broadcast_operator<mul_forward, mul_backward_a, mul_gradient_b>(); }
OpKernels div() { return broadcast_operator<div_forward, div_backward_a, div_gradient_b>(); }

// Its gradient flows through: dY itself is each input's contribution, no kernel runs.
OpKernels add() {
  return {.forward = [](const KernelCall& c, std::span<float> y) { add_forward(c.in.at(0), c.in.at(1), y); }};
}

// Evaluation is the identity (inverted dropout: the expectation is x).
OpKernels dropout() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            if (c.ctx.inference) return copy(c.in.at(0), y);
            dropout_forward(dropout_key(c), dropout_p(c), c.in.at(0), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            dropout_backward(dropout_key(c), dropout_p(c), dy, dx);
          }};
}

OpKernels softmax() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            softmax_forward(rows_shape(c.forward.shape), c.in.at(0), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            softmax_backward(rows_shape(c.forward.shape), dy, c.forward_output(), dx);
          },
          .validate = validate_rows};
}

// Sets the step's loss and count of correct rows; its gradient reads the probabilities.
OpKernels softmax_cross_entropy() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            const RowsShape s = rows_shape(c.forward.shape);
            c.ctx.loss = softmax_cross_entropy_forward(s, c.in.at(0), c.ctx.labels, y);
            c.ctx.correct = count_correct(s, y, c.ctx.labels);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float>, std::span<float> dx) {
            softmax_cross_entropy_backward(rows_shape(c.forward.shape), c.forward_output(), c.ctx.labels, dx);
          },
          .validate = validate_rows};
}

// No classes: nothing counts as correct.
OpKernels mean_squared_error() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            c.ctx.loss = mean_squared_error_forward(c.in.at(0), c.in.at(1), y);
            c.ctx.correct = 0;
          },
          .input_gradient = [](const KernelCall& c, std::span<const float>, std::span<float> dx) {
            mean_squared_error_backward(c.forward_output(), dx);
          }};
}

}  // namespace poet::runtime::detail::bind
