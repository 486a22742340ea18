// Node -> kernel calls. The shapes come from the graph's nodes: a forward node's input
// shape and attributes give the kernel's shape struct, and a gradient node uses the
// shape struct of the forward node it differentiates (GradOf::node).
#include "node_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "poet/runtime/kernels.h"
#include "poet/util/error.h"

namespace poet::runtime::detail {
namespace {

const Shape& input_shape(const Graph& g, const Node& f, int slot = 0) { return g.node(f.inputs.at(slot)).shape; }

LinearShape linear_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  return {.rows = element_count(x) / x.back(), .in_features = x.back(), .out_features = f.shape.back(),
          .bias = f.attrs.bias};
}

Conv2dShape conv_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  POET_CHECK(x.size() == 4 && f.shape.size() == 4, fmt::format("conv2d '{}' is not NCHW", f.name));
  return {.batch = x[0], .in_channels = x[1], .in_h = x[2], .in_w = x[3], .out_channels = f.shape[1],
          .kernel_h = f.attrs.kernel_h, .kernel_w = f.attrs.kernel_w, .stride = f.attrs.stride,
          .pad_h = f.attrs.pad_h, .pad_w = f.attrs.pad_w, .groups = f.attrs.groups, .bias = f.attrs.bias};
}

Pool2dShape pool_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  POET_CHECK(x.size() == 4, fmt::format("pool '{}' is not NCHW", f.name));
  return {.batch = x[0], .channels = x[1], .in_h = x[2], .in_w = x[3], .kernel_h = f.attrs.kernel_h,
          .kernel_w = f.attrs.kernel_w, .stride = f.attrs.stride, .pad_h = f.attrs.pad_h, .pad_w = f.attrs.pad_w};
}

BatchNormShape batch_norm_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  POET_CHECK(x.size() >= 2, fmt::format("batch norm '{}' needs [batch, channels, ...]", f.name));
  return {.batch = x[0], .channels = x[1], .spatial = element_count(x) / (x[0] * x[1])};
}

LayerNormShape layer_norm_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  return {.rows = element_count(x) / x.back(), .features = x.back()};
}

RowsShape rows_shape(const Shape& s) { return {.rows = element_count(s) / s.back(), .cols = s.back()}; }

// Scores A B^T are scaled by 1 / sqrt(k) (scaled dot-product attention); the graph has no
// scale attribute, so transpose_b is what marks a matmul as attention scores.
MatMulShape matmul_shape(const Graph& g, const Node& f) {
  const Shape& a = input_shape(g, f, 0);
  const std::int64_t m = a[a.size() - 2], k = a.back();
  return {.batch = element_count(a) / (m * k), .m = m, .k = k, .n = f.shape.back(),
          .transpose_b = f.attrs.transpose_b,
          .alpha = f.attrs.transpose_b ? 1.0f / std::sqrt(static_cast<float>(k)) : 1.0f};
}

// Both directions see [batch, heads, seq, head_dim] on one side.
HeadsShape heads_shape(const Shape& split) { return {split[0], split[2], split[1], split[3]}; }
HeadsShape heads_shape(const Graph& g, const Node& f) {
  return heads_shape(f.op == OpKind::SplitHeads ? f.shape : input_shape(g, f));
}

EmbeddingShape embedding_shape(const Graph& g, const Node& f) {
  const std::int64_t dim = f.shape.back();
  return {.tokens = element_count(input_shape(g, f)), .vocab = f.param_count / dim, .dim = dim};
}

// Token ids travel in the arena as the bit patterns of int32 values in 4-byte elements.
std::span<const std::int32_t> as_ids(std::span<const float> t) {
  return {reinterpret_cast<const std::int32_t*>(t.data()), t.size()};
}

// The input tensors of one node, found by position or by the node that produced them.
class Inputs {
 public:
  Inputs(const Node& n, std::span<const std::span<float>> tensors) : node_(n), tensors_(tensors) {}
  std::span<const float> at(std::size_t i) const { return tensors_[i]; }
  std::span<const float> of(NodeId id) const {
    for (std::size_t i = 0; i < node_.inputs.size(); ++i)
      if (node_.inputs[i] == id) return tensors_[i];
    fail_internal(__FILE__, __LINE__, fmt::format("'{}' does not read node {}", node_.name, id));
  }

 private:
  const Node& node_;
  std::span<const std::span<float>> tensors_;
};

// Weight and bias of a linear or convolution slice.
struct WeightBias {
  std::span<const float> weight, bias;
};
WeightBias split_weight_bias(std::span<const float> p, std::int64_t outputs, bool bias) {
  const std::size_t b = bias ? static_cast<std::size_t>(outputs) : 0;
  return {p.first(p.size() - b), p.last(b)};
}
WeightBias linear_params(const Graph& g, NodeId f, StepContext& ctx) {
  return split_weight_bias(ctx.parameters->values(f), g.node(f).shape.back(), g.node(f).attrs.bias);
}
WeightBias conv_params(const Graph& g, NodeId f, StepContext& ctx) {
  return split_weight_bias(ctx.parameters->values(f), g.node(f).shape.at(1), g.node(f).attrs.bias);
}
// gamma and beta, the first two quarters (batch norm) or halves (layer norm) of the slice.
WeightBias norm_params(NodeId f, std::int64_t groups, StepContext& ctx) {
  std::span<const float> p = ctx.parameters->values(f);
  const auto c = static_cast<std::size_t>(groups);
  return {p.subspan(0, c), p.subspan(c, c)};
}

void copy(std::span<const float> from, std::span<float> to) {
  POET_CHECK(from.size() == to.size(), "copy between tensors of different sizes");
  if (!from.empty() && from.data() != to.data()) std::memcpy(to.data(), from.data(), from.size_bytes());
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

// Training normalizes with the batch's statistics; inference with the norm's running
// statistics, the third and fourth quarters of its slice, where the executor commits them.
void batch_norm_statistics(const Graph& g, NodeId v, std::span<const float> x, std::span<float> stats,
                           const StepContext& ctx) {
  const BatchNormShape s = batch_norm_shape(g, g.node(v));
  if (!ctx.inference) return batch_norm_stats(s, x, stats);
  const NodeId norm = ctx.batch_norm_owner[static_cast<std::size_t>(v)];
  POET_CHECK(norm >= 0, fmt::format("batch-norm statistics '{}' feed no batch norm", g.node(v).name));
  const std::span<const float> p = ctx.parameters->values(norm);
  const auto c = static_cast<std::size_t>(s.channels);
  batch_norm_inference_stats(s, p.subspan(2 * c, c), p.subspan(3 * c, c), stats);
}

void forward(const Graph& g, NodeId v, std::span<float> y, const Inputs& in, StepContext& ctx) {
  const Node& n = g.node(v);
  switch (n.op) {
    case OpKind::Input: return copy(ctx.input_batch, y);
    case OpKind::Linear: {
      const auto [w, b] = linear_params(g, v, ctx);
      return linear_forward(linear_shape(g, n), in.at(0), w, b, y);
    }
    case OpKind::Conv2d: {
      const auto [w, b] = conv_params(g, v, ctx);
      return conv2d_forward(conv_shape(g, n), in.at(0), w, b, y, ctx.scratch);
    }
    case OpKind::BatchNormStats: return batch_norm_statistics(g, v, in.at(0), y, ctx);
    case OpKind::BatchNorm2d: {
      const BatchNormShape s = batch_norm_shape(g, n);
      const auto [gamma, beta] = norm_params(v, s.channels, ctx);
      return batch_norm_forward(s, in.at(0), in.at(1), gamma, beta, y);
    }
    case OpKind::LayerNormStats: return layer_norm_stats(layer_norm_shape(g, n), in.at(0), y);
    case OpKind::LayerNorm: {
      const LayerNormShape s = layer_norm_shape(g, n);
      const auto [gamma, beta] = norm_params(v, s.features, ctx);
      return layer_norm_forward(s, in.at(0), in.at(1), gamma, beta, y);
    }
    case OpKind::ReLU: return relu_forward(in.at(0), y);
    case OpKind::ReLU6: return relu6_forward(in.at(0), y);
    case OpKind::GELU: return gelu_forward(in.at(0), y);
    case OpKind::Tanh: return tanh_forward(in.at(0), y);
    case OpKind::Sigmoid: return sigmoid_forward(in.at(0), y);
    case OpKind::MaxPool2d: return max_pool2d_forward(pool_shape(g, n), in.at(0), y);
    case OpKind::AvgPool2d: return avg_pool2d_forward(pool_shape(g, n), in.at(0), y);
    case OpKind::GlobalAvgPool: {
      const Shape& x = input_shape(g, n);
      return global_avg_pool_forward(x[0], x[1], element_count(x) / (x[0] * x[1]), in.at(0), y);
    }
    case OpKind::Add: return add_forward(in.at(0), in.at(1), y);
    case OpKind::Flatten: return flatten_forward(in.at(0), y);
    case OpKind::Dropout:
      if (ctx.inference) return copy(in.at(0), y);  // inverted dropout: the expectation is x
      return dropout_forward({ctx.seed, ctx.step, static_cast<std::uint32_t>(v)}, static_cast<float>(n.attrs.dropout_p),
                             in.at(0), y);
    case OpKind::MatMul: return matmul_forward(matmul_shape(g, n), in.at(0), in.at(1), y);
    case OpKind::Softmax: return softmax_forward(rows_shape(n.shape), in.at(0), y);
    case OpKind::Embedding:
      return embedding_forward(embedding_shape(g, n), as_ids(in.at(0)), ctx.parameters->values(v), y);
    case OpKind::SplitHeads: return split_heads(heads_shape(g, n), in.at(0), y);
    case OpKind::MergeHeads: return merge_heads(heads_shape(g, n), in.at(0), y);
    case OpKind::SoftmaxCrossEntropy: {
      const RowsShape s = rows_shape(n.shape);
      ctx.loss = softmax_cross_entropy_forward(s, in.at(0), ctx.labels, y);
      ctx.correct = count_correct(s, y, ctx.labels);
      return;
    }
    default: break;
  }
  fail_internal(__FILE__, __LINE__, fmt::format("no forward kernel for '{}' (check_runnable lets it pass)", n.name));
}

void input_gradient(const Graph& g, const Node& n, std::span<float> dx, const Inputs& in, StepContext& ctx) {
  const NodeId fid = n.grad.node;
  const Node& f = g.node(fid);
  // dY comes first, except for the loss, whose gradient starts the backward pass.
  const std::span<const float> dy = f.role == Role::Loss ? std::span<const float>{} : in.at(0);
  switch (f.op) {
    case OpKind::Linear: return linear_backward_input(linear_shape(g, f), dy, linear_params(g, fid, ctx).weight, dx);
    case OpKind::Conv2d:
      return conv2d_backward_input(conv_shape(g, f), dy, conv_params(g, fid, ctx).weight, dx, ctx.scratch);
    case OpKind::BatchNorm2d: {
      const BatchNormShape s = batch_norm_shape(g, f);
      return batch_norm_backward_input(s, dy, in.of(f.inputs[0]), in.of(f.inputs[1]),
                                       norm_params(fid, s.channels, ctx).weight, dx);
    }
    case OpKind::LayerNorm: {
      const LayerNormShape s = layer_norm_shape(g, f);
      return layer_norm_backward_input(s, dy, in.of(f.inputs[0]), in.of(f.inputs[1]),
                                       norm_params(fid, s.features, ctx).weight, dx);
    }
    case OpKind::ReLU: return relu_backward(dy, in.of(fid), dx);
    case OpKind::ReLU6: return relu6_backward(dy, in.of(fid), dx);
    case OpKind::Tanh: return tanh_backward(dy, in.of(fid), dx);
    case OpKind::Sigmoid: return sigmoid_backward(dy, in.of(fid), dx);
    case OpKind::GELU: return gelu_backward(dy, in.of(f.inputs[0]), dx);
    case OpKind::MaxPool2d: return max_pool2d_backward(pool_shape(g, f), dy, in.of(f.inputs[0]), dx);
    case OpKind::AvgPool2d: return avg_pool2d_backward(pool_shape(g, f), dy, dx);
    case OpKind::GlobalAvgPool: {
      const Shape& x = input_shape(g, f);
      return global_avg_pool_backward(x[0], x[1], element_count(x) / (x[0] * x[1]), dy, dx);
    }
    case OpKind::Flatten: return flatten_backward(dy, dx);
    case OpKind::Dropout:
      return dropout_backward({ctx.seed, ctx.step, static_cast<std::uint32_t>(fid)},
                              static_cast<float>(f.attrs.dropout_p), dy, dx);
    case OpKind::MatMul: {
      const MatMulShape s = matmul_shape(g, f);
      if (n.grad.slot == 0) return matmul_backward_a(s, dy, in.of(f.inputs[1]), dx);
      return matmul_backward_b(s, dy, in.of(f.inputs[0]), dx);
    }
    case OpKind::Softmax: return softmax_backward(rows_shape(f.shape), dy, in.of(fid), dx);
    case OpKind::SplitHeads: return split_heads_backward(heads_shape(g, f), dy, dx);
    case OpKind::MergeHeads: return merge_heads_backward(heads_shape(g, f), dy, dx);
    case OpKind::SoftmaxCrossEntropy:
      return softmax_cross_entropy_backward(rows_shape(f.shape), in.of(fid), ctx.labels, dx);
    default: break;
  }
  fail_internal(__FILE__, __LINE__, fmt::format("no input-gradient kernel for '{}'", n.name));
}

void parameter_gradient(const Graph& g, const Node& n, const Inputs& in, StepContext& ctx) {
  const NodeId fid = n.grad.node;
  const Node& f = g.node(fid);
  std::span<float> grad = ctx.parameters->gradient(fid);
  const std::span<const float> dy = in.at(0);
  auto split = [&grad](std::size_t tail) { return std::pair{grad.first(grad.size() - tail), grad.last(tail)}; };
  switch (f.op) {
    case OpKind::Linear: {
      const auto [dw, db] = split(f.attrs.bias ? static_cast<std::size_t>(f.shape.back()) : 0);
      return linear_backward_params(linear_shape(g, f), dy, in.of(f.inputs[0]), dw, db);
    }
    case OpKind::Conv2d: {
      const auto [dw, db] = split(f.attrs.bias ? static_cast<std::size_t>(f.shape.at(1)) : 0);
      return conv2d_backward_params(conv_shape(g, f), dy, in.of(f.inputs[0]), dw, db, ctx.scratch);
    }
    case OpKind::BatchNorm2d: {
      const auto [dgamma, dbeta] = split(grad.size() / 2);
      return batch_norm_backward_params(batch_norm_shape(g, f), dy, in.of(f.inputs[0]), in.of(f.inputs[1]), dgamma,
                                        dbeta);
    }
    case OpKind::LayerNorm: {
      const auto [dgamma, dbeta] = split(grad.size() / 2);
      return layer_norm_backward_params(layer_norm_shape(g, f), dy, in.of(f.inputs[0]), in.of(f.inputs[1]), dgamma,
                                        dbeta);
    }
    case OpKind::Embedding:
      return embedding_backward_table(embedding_shape(g, f), as_ids(in.of(f.inputs[0])), dy, grad);
    default: break;
  }
  fail_internal(__FILE__, __LINE__, fmt::format("no parameter-gradient kernel for '{}'", n.name));
}

// Contributions summed in input order, the same order in every plan.
void accumulate(std::span<float> sum, std::span<const std::span<float>> parts) {
  add_forward(parts[0], parts[1], sum);
  for (std::size_t i = 2; i < parts.size(); ++i) add_forward(sum, parts[i], sum);
}

bool forward_kernel_exists(OpKind op) {
  switch (op) {
    case OpKind::Input: case OpKind::Linear: case OpKind::Conv2d: case OpKind::BatchNormStats:
    case OpKind::BatchNorm2d: case OpKind::LayerNormStats: case OpKind::LayerNorm: case OpKind::ReLU:
    case OpKind::ReLU6: case OpKind::GELU: case OpKind::Tanh: case OpKind::Sigmoid: case OpKind::MaxPool2d:
    case OpKind::AvgPool2d: case OpKind::GlobalAvgPool: case OpKind::Add: case OpKind::Flatten:
    case OpKind::Dropout: case OpKind::MatMul: case OpKind::Softmax: case OpKind::Embedding:
    case OpKind::SplitHeads: case OpKind::MergeHeads: case OpKind::SoftmaxCrossEntropy:
      return true;
    default:
      return false;
  }
}

bool input_gradient_exists(OpKind op) {
  return forward_kernel_exists(op) && op != OpKind::Input && op != OpKind::BatchNormStats &&
         op != OpKind::LayerNormStats && op != OpKind::Add && op != OpKind::Embedding;
}

bool parameter_gradient_exists(OpKind op) {
  return op == OpKind::Linear || op == OpKind::Conv2d || op == OpKind::BatchNorm2d || op == OpKind::LayerNorm ||
         op == OpKind::Embedding;
}

// The kernels' own shape checks, run once before any step.
void validate_shapes(const Graph& g, const Node& f) {
  switch (f.op) {
    case OpKind::Linear: return validate(linear_shape(g, f));
    case OpKind::Conv2d: return validate(conv_shape(g, f));
    case OpKind::MaxPool2d: case OpKind::AvgPool2d: return validate(pool_shape(g, f));
    case OpKind::BatchNorm2d: case OpKind::BatchNormStats: return validate(batch_norm_shape(g, f));
    case OpKind::LayerNorm: case OpKind::LayerNormStats: return validate(layer_norm_shape(g, f));
    case OpKind::Softmax: case OpKind::SoftmaxCrossEntropy: return validate(rows_shape(f.shape));
    case OpKind::MatMul: return validate(matmul_shape(g, f));
    case OpKind::SplitHeads: case OpKind::MergeHeads: return validate(heads_shape(g, f));
    case OpKind::Embedding: return validate(embedding_shape(g, f));
    default: return;
  }
}

}  // namespace

void check_runnable(const Graph& g, NodeId v) {
  const Node& n = g.node(v);
  auto reject = [&](std::string_view what) {
    throw InputError(fmt::format("node '{}' ({}): the runtime has no kernel for {}; it runs `autodiff` training "
                                 "graphs built from the Faithful models (build the graph with --backward autodiff)",
                                 n.name, v, what));
  };
  switch (n.op) {
    case OpKind::GradInput: {
      const Node& f = g.node(n.grad.node);
      if (!input_gradient_exists(f.op)) reject(fmt::format("the input gradient of op '{}'", op_name(f.op)));
      if (f.op != OpKind::MatMul && n.grad.slot != 0)
        reject(fmt::format("the gradient of input slot {} of op '{}'", n.grad.slot, op_name(f.op)));
      return;
    }
    case OpKind::GradParam: {
      const Node& f = g.node(n.grad.node);
      if (!parameter_gradient_exists(f.op)) reject(fmt::format("the parameter gradient of op '{}'", op_name(f.op)));
      return;
    }
    case OpKind::GradAccumulate:
      if (n.inputs.size() < 2) reject("an accumulation of fewer than two contributions");
      return;
    default:
      if (!forward_kernel_exists(n.op)) reject(fmt::format("op '{}'", op_name(n.op)));
      try {
        validate_shapes(g, n);
      } catch (const InputError& e) {
        throw InputError(fmt::format("node '{}' ({}): {}", n.name, v, e.what()));
      }
  }
}

std::int64_t scratch_elements(const Graph& g) {
  std::int64_t floats = 0;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) floats = std::max(floats, scratch_elements(g, v));
  return floats;
}

NodeId check_trainable(const Graph& g) {
  g.validate();
  if (!g.has_backward())
    throw InputError(fmt::format("graph '{}' has no backward nodes; the runtime runs training steps, so give it a "
                                 "training graph (--backward autodiff)",
                                 g.name()));
  NodeId input = -1;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    const Node& n = g.node(v);
    if (n.element_bytes != 4)
      throw InputError(fmt::format("node '{}' ({}) has {}-byte elements; the runtime computes in fp32 (4 bytes)",
                                   n.name, v, n.element_bytes));
    check_runnable(g, v);
    if (n.op != OpKind::Input) continue;
    if (input >= 0)
      throw InputError(fmt::format("graph '{}' has two input nodes, '{}' and '{}'; the runtime feeds one batch "
                                   "tensor, so merge them into one input",
                                   g.name(), g.node(input).name, n.name));
    input = v;
  }
  if (input < 0) throw InputError(fmt::format("graph '{}' has no input node to feed the batch into", g.name()));
  return input;
}

std::int64_t scratch_elements(const Graph& g, NodeId v) {
  const Node& n = g.node(v);
  const Node& f = n.role == Role::Backward && n.op != OpKind::GradAccumulate ? g.node(n.grad.node) : n;
  return f.op == OpKind::Conv2d ? conv2d_scratch_elements(conv_shape(g, f)) : 0;
}

std::vector<NodeId> batch_norm_owners(const Graph& g) {
  std::vector<NodeId> owner(g.size(), -1);
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    const Node& n = g.node(v);
    if (n.op == OpKind::BatchNorm2d && n.role != Role::Backward) owner[static_cast<std::size_t>(n.inputs.at(1))] = v;
  }
  return owner;
}

void run_node(const Graph& g, NodeId v, std::span<float> out, std::span<const std::span<float>> inputs,
              StepContext& ctx) {
  const Node& n = g.node(v);
  const Inputs in(n, inputs);
  switch (n.op) {
    case OpKind::GradInput: return input_gradient(g, n, out, in, ctx);
    case OpKind::GradParam: return parameter_gradient(g, n, in, ctx);
    case OpKind::GradAccumulate: return accumulate(out, inputs);
    default: return forward(g, v, out, in, ctx);
  }
}

}  // namespace poet::runtime::detail
