// The runtime's operator table: the bindings of op_kernel_defs.h, keyed by OpKind.
#include "op_kernels.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstring>

#include "op_kernel_defs.h"
#include "poet/graph/op_table.h"
#include "poet/util/error.h"

namespace poet::runtime::detail {

using namespace kernels;  // the kernels this module binds to operators
namespace {

std::array<OpKernels, kOpKindCount> make_table() {
  std::array<OpKernels, kOpKindCount> t{};  // ops left out have no kernels
  auto set = [&t](OpKind op, OpKernels k) { t[static_cast<std::size_t>(op)] = k; };
  set(OpKind::Input, bind::input());
  set(OpKind::Linear, bind::linear());
  set(OpKind::Conv2d, bind::conv2d());
  set(OpKind::ConvTranspose2d, bind::conv_transpose2d());
  set(OpKind::BatchNorm2d, bind::batch_norm2d());
  set(OpKind::BatchNormStats, bind::batch_norm_stats());
  set(OpKind::LayerNorm, bind::layer_norm());
  set(OpKind::LayerNormStats, bind::layer_norm_stats());
  set(OpKind::GroupNorm, bind::group_norm());
  set(OpKind::GroupNormStats, bind::group_norm_stats());
  set(OpKind::ReLU, bind::relu());
  set(OpKind::ReLU6, bind::relu6());
  set(OpKind::ReLUMask, bind::relu_mask());
  set(OpKind::GELU, bind::gelu());
  set(OpKind::Tanh, bind::tanh());
  set(OpKind::Sigmoid, bind::sigmoid());
  set(OpKind::MaxPool2d, bind::max_pool2d());
  set(OpKind::MaxPoolIndices, bind::max_pool_indices());
  set(OpKind::AvgPool2d, bind::avg_pool2d());
  set(OpKind::GlobalAvgPool, bind::global_avg_pool());
  set(OpKind::Add, bind::add());
  set(OpKind::Flatten, bind::flatten());
  set(OpKind::Concat, bind::concat());
  set(OpKind::Dropout, bind::dropout());
  set(OpKind::MatMul, bind::matmul());
  set(OpKind::Softmax, bind::softmax());
  set(OpKind::Embedding, bind::embedding());
  set(OpKind::SplitHeads, bind::split_heads());
  set(OpKind::MergeHeads, bind::merge_heads());
  set(OpKind::SoftmaxCrossEntropy, bind::softmax_cross_entropy());
  set(OpKind::MeanSquaredError, bind::mean_squared_error());
  set(OpKind::Transpose, bind::transpose());
  set(OpKind::Reshape, bind::reshape());
  set(OpKind::Slice, bind::slice());
  set(OpKind::Scale, bind::scale());
  set(OpKind::GELUErf, bind::gelu_erf());
  set(OpKind::AddParameter, bind::add_parameter());
  set(OpKind::PrependTokens, bind::prepend_tokens());
  set(OpKind::HardSigmoid, bind::hard_sigmoid());
  set(OpKind::LeakyReLU, bind::leaky_relu());
  set(OpKind::ELU, bind::elu());
  set(OpKind::Softplus, bind::softplus());
  set(OpKind::PRelu, bind::prelu());
  set(OpKind::HardSwish, bind::hard_swish());
  set(OpKind::Mul, bind::mul());
  set(OpKind::Pad, bind::pad());
  set(OpKind::UpsampleNearest, bind::upsample_nearest());
  set(OpKind::UpsampleBilinear, bind::upsample_bilinear());
  set(OpKind::MulParameter, bind::mul_parameter());
  set(OpKind::AddConstant, bind::add_constant());
  set(OpKind::AddGathered, bind::add_gathered());
  set(OpKind::Div, bind::div());
  return t;
}

}  // namespace

const OpKernels& op_kernels(OpKind op) {
  static const std::array<OpKernels, kOpKindCount> table = make_table();
  const auto k = static_cast<std::size_t>(op);
  POET_CHECK(k < kOpKindCount, fmt::format("no operator {} in the runtime's table", k));
  return table[k];
}

std::span<const float> Inputs::of(NodeId id) const {
  for (std::size_t i = 0; i < node_.inputs.size(); ++i)
    if (node_.inputs[i] == id) return tensors_[i];
  fail_internal(__FILE__, __LINE__, fmt::format("'{}' does not read node {}", node_.name, id));
}

const Shape& input_shape(const Graph& g, const Node& f, int slot) { return g.node(f.inputs.at(slot)).shape; }

RowsShape rows_shape(const Shape& s) { return {.rows = element_count(s) / s.back(), .cols = s.back()}; }

void copy(std::span<const float> from, std::span<float> to) {
  POET_CHECK(from.size() == to.size(), "copy between tensors of different sizes");
  if (!from.empty() && from.data() != to.data()) std::memcpy(to.data(), from.data(), from.size_bytes());
}

SplitParams split_tail(std::span<const float> p, std::size_t tail) { return {p.first(p.size() - tail), p.last(tail)}; }
SplitGradient split_tail(std::span<float> p, std::size_t tail) { return {p.first(p.size() - tail), p.last(tail)}; }

ParameterLayout he_uniform(std::int64_t weights, std::int64_t biases, std::int64_t fan_in) {
  return {.count = weights + biases,
          .trainable = weights + biases,
          .weights = weights,
          .bound = std::sqrt(6.0f / static_cast<float>(fan_in))};
}

ParameterLayout small_learned_tensor(const Graph&, const Node& f) {
  return {.count = f.param_count, .trainable = f.param_count, .weights = f.param_count, .bound = 0.02f};
}

}  // namespace poet::runtime::detail
