// Kernel bindings of the norms and of the statistics nodes the autodiff backward lowers
// them into. A norm reads x (slot 0) and its statistics (slot 1); its parameters are
// gamma and beta per group, then (batch norm) the running mean and variance.
#include <fmt/format.h>

#include "op_kernel_defs.h"
#include "poet/graph/op_table.h"
#include "poet/kernels/kernels.h"
#include "poet/util/error.h"

namespace poet::runtime::detail::bind {

using namespace kernels;  // the kernels this file binds to operators
namespace {

// The shapes of a norm or of its statistics node: both read x first.
BatchNormShape batch_norm_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  POET_CHECK(x.size() >= 2, fmt::format("batch norm '{}' needs [batch, channels, ...]", f.name));
  return {.batch = x[0],
          .channels = x[1],
          .spatial = element_count(x) / (x[0] * x[1]),
          .eps = static_cast<float>(f.attrs.epsilon)};
}
std::int64_t groups(const BatchNormShape& s) { return s.channels; }

LayerNormShape layer_norm_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  return {.rows = element_count(x) / x.back(), .features = x.back(), .eps = static_cast<float>(f.attrs.epsilon)};
}
std::int64_t groups(const LayerNormShape& s) { return s.features; }

GroupNormShape group_norm_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  POET_CHECK(x.size() >= 2, fmt::format("group norm '{}' needs [batch, channels, ...]", f.name));
  return {.batch = x[0],
          .channels = x[1],
          .spatial = element_count(x) / (x[0] * x[1]),
          .groups = f.attrs.groups,
          .eps = static_cast<float>(f.attrs.epsilon)};
}
// gamma and beta are per channel (the statistics per group).
std::int64_t groups(const GroupNormShape& s) { return s.channels; }

// The forward kernel (s, x, stats, gamma, beta, y) and the input gradient's (s, dy, x,
// stats, gamma, dx) share one signature; the parameter gradient's writes two outputs.
template <class S>
using NormKernel = void (*)(const S&, std::span<const float>, std::span<const float>, std::span<const float>,
                            std::span<const float>, std::span<float>);
template <class S>
using BackwardParams = void (*)(const S&, std::span<const float>, std::span<const float>, std::span<const float>,
                                std::span<float>, std::span<float>);

// gamma and beta: the first two `groups`-long pieces of the norm's parameters.
struct GammaBeta {
  std::span<const float> gamma, beta;
};
template <class S>
GammaBeta gamma_beta(const KernelCall& c, const S& s) {
  const auto n = static_cast<std::size_t>(groups(s));
  return {c.parameters().subspan(0, n), c.parameters().subspan(n, n)};
}

// A norm's kernels, batch or layer norm alike.
template <class S, S (*shape_of)(const Graph&, const Node&), NormKernel<S> fwd, NormKernel<S> bwd_input,
          BackwardParams<S> bwd_params>
OpKernels norm_kernels() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            const S s = shape_of(c.g, c.forward);
            const auto [gamma, beta] = gamma_beta(c, s);
            fwd(s, c.in.at(0), c.in.at(1), gamma, beta, y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            const S s = shape_of(c.g, c.forward);
            bwd_input(s, dy, c.forward_input(0), c.forward_input(1), gamma_beta(c, s).gamma, dx);
          },
          // The gradient holds dgamma, then dbeta.
          .parameter_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> grad) {
            const auto [dgamma, dbeta] = split_tail(grad, grad.size() / 2);
            bwd_params(shape_of(c.g, c.forward), dy, c.forward_input(0), c.forward_input(1), dgamma, dbeta);
          },
          .validate = [](const Graph& g, const Node& f) { validate(shape_of(g, f)); }};
}

// Training normalizes with the batch's statistics; inference with the norm's running
// statistics, the third and fourth quarters of its slice, where the executor commits them.
void batch_norm_statistics(const KernelCall& c, std::span<float> stats) {
  const BatchNormShape s = batch_norm_shape(c.g, c.forward);
  if (!c.ctx.inference) return kernels::batch_norm_stats(s, c.in.at(0), stats);
  const NodeId norm = c.ctx.batch_norm_owner[static_cast<std::size_t>(c.forward_id)];
  POET_CHECK(norm >= 0, fmt::format("batch-norm statistics '{}' feed no batch norm", c.forward.name));
  const std::span<const float> p = c.ctx.parameters->values(norm);
  const auto n = static_cast<std::size_t>(s.channels);
  batch_norm_inference_stats(s, p.subspan(2 * n, n), p.subspan(3 * n, n), stats);
}

}  // namespace

// gamma, beta, running mean, running variance per channel; only gamma and beta are trained,
// and only when the norm is affine.
OpKernels batch_norm2d() {
  OpKernels k = norm_kernels<BatchNormShape, batch_norm_shape, batch_norm_forward, batch_norm_backward_input,
                             batch_norm_backward_params>();
  k.parameters = [](const Graph& g, const Node& f) {
    const std::int64_t c = input_shape(g, f).at(1);
    return ParameterLayout{.count = 4 * c, .trainable = trainable_parameters(f), .ones = {{{0, c}, {3 * c, c}}}};
  };
  return k;
}

// gamma and beta per feature.
OpKernels layer_norm() {
  OpKernels k = norm_kernels<LayerNormShape, layer_norm_shape, layer_norm_forward, layer_norm_backward_input,
                             layer_norm_backward_params>();
  k.parameters = [](const Graph& g, const Node& f) {
    const std::int64_t features = input_shape(g, f).back();
    return ParameterLayout{.count = 2 * features, .trainable = trainable_parameters(f), .ones = {{{0, features}}}};
  };
  return k;
}

// gamma and beta per channel.
OpKernels group_norm() {
  OpKernels k = norm_kernels<GroupNormShape, group_norm_shape, group_norm_forward, group_norm_backward_input,
                             group_norm_backward_params>();
  k.parameters = [](const Graph& g, const Node& f) {
    const std::int64_t channels = input_shape(g, f).at(1);
    return ParameterLayout{.count = 2 * channels, .trainable = trainable_parameters(f), .ones = {{{0, channels}}}};
  };
  return k;
}

OpKernels batch_norm_stats() {
  return {.forward = batch_norm_statistics,
          .validate = [](const Graph& g, const Node& f) { validate(batch_norm_shape(g, f)); }};
}

OpKernels layer_norm_stats() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            kernels::layer_norm_stats(layer_norm_shape(c.g, c.forward), c.in.at(0), y);
          },
          .validate = [](const Graph& g, const Node& f) { validate(layer_norm_shape(g, f)); }};
}

OpKernels group_norm_stats() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            kernels::group_norm_stats(group_norm_shape(c.g, c.forward), c.in.at(0), y);
          },
          .validate = [](const Graph& g, const Node& f) { validate(group_norm_shape(g, f)); }};
}

}  // namespace poet::runtime::detail::bind
