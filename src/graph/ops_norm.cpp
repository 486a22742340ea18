// Normalizations: batch, layer and group norm. Each norm is one node in the forward graph;
// the autodiff backward lowers it into a statistics node (per-group mean and inverse
// standard deviation) and the norm reading them, so that its gradient reads the statistics
// rather than the output.
#include <fmt/format.h>

#include "op_defs.h"

namespace poet::ops {
namespace {

// Scale and shift gradients of a norm: a multiply-add and an add per element.
double norm_param_grad(const Node& f, const Node&) { return 3 * elements(f.shape); }

// Norms read x and the statistics, never their own output; no gradient flows into the
// statistics node (slot 1): the rule's dX already accounts for it.
GradientRule norm_gradient() {
  return {.input = {.same_input = true, .stats = true},
          .params = {.all_inputs = true, .stats = true},
          .differentiable_slots = 1,
          .input_flops = grad_per_input_8,
          .param_flops = norm_param_grad};
}

// A norm, lowered into `statistics` for its backward.
OpDef norm(OpKind op, std::string_view name, std::string_view reference_class, Shape (*shape)(const OpArgs&),
           double (*flops)(const OpArgs&, const Shape&), std::int64_t (*params)(const OpArgs&, const Shape&),
           OpKind statistics) {
  OpDef d = parameterless(op, name, reference_class, shape, flops, norm_gradient());
  d.params = params;
  d.statistics = statistics;
  // Without affine, scale and shift stay at 1 and 0 (they are kept, as ones and zeros, so
  // that one kernel serves both kinds).
  d.untrained = [](const Node& n) { return n.attrs.affine ? 0 : n.param_count; };
  return d;
}

// Mean and inverse standard deviation per group, [groups, 2]: a sum, a sum of squares and
// the normalization's share, about 3 FLOP per element of x.
double stats_flops(const OpArgs& a, const Shape&) { return 3.0 * elements(a.input()); }

// A group norm's input, [batch, channels, ...], its channels split evenly into the groups.
void require_groups(const OpArgs& a, std::string_view op) {
  const Shape& x = a.input();
  require(x.size() >= 2 && a.attrs.groups >= 1 && x[1] % a.attrs.groups == 0, op,
          fmt::format("needs a [batch, channels, ...] input whose channels the {} groups divide, not {}",
                      a.attrs.groups, shape_string(x)));
}

}  // namespace

OpDef batch_norm2d() {
  OpDef d = norm(
      OpKind::BatchNorm2d, "batch_norm2d", "BatchNorm2d",
      [](const OpArgs& a) {
        require(a.input().size() >= 2, "batch_norm2d", "needs a [batch, channels, ...] input");
        return a.input();
      },
      // Reference: 2 FLOP per element, and 4 parameters per channel (scale, shift and the
      // running statistics).
      [](const OpArgs& a, const Shape&) { return 2.0 * elements(a.input()); },
      [](const OpArgs& a, const Shape&) { return 4 * a.input()[1]; }, OpKind::BatchNormStats);
  // Of scale, shift, running mean and running variance, the last two (all four without affine).
  d.untrained = [](const Node& n) { return n.attrs.affine ? n.param_count / 2 : n.param_count; };
  return d;
}

// Per channel.
OpDef batch_norm_stats() {
  return parameterless(
      OpKind::BatchNormStats, "batch_norm_stats", "",
      [](const OpArgs& a) {
        require(a.input().size() >= 2, "batch_norm_stats", "needs a [batch, channels, ...] input");
        return Shape{a.input()[1], 2};
      },
      stats_flops, std::nullopt);
}

OpDef layer_norm() {
  return norm(
      OpKind::LayerNorm, "layer_norm", "",
      [](const OpArgs& a) {
        require(!a.input().empty(), "layer_norm", "needs a [rows..., features] input");
        return a.input();
      },
      // Mean, variance, normalize, scale and shift: about 8 FLOP per element; scale and
      // shift per feature.
      [](const OpArgs& a, const Shape&) { return 8.0 * elements(a.input()); },
      [](const OpArgs& a, const Shape&) { return 2 * a.input().back(); }, OpKind::LayerNormStats);
}

// Per row.
OpDef layer_norm_stats() {
  return parameterless(
      OpKind::LayerNormStats, "layer_norm_stats", "",
      [](const OpArgs& a) {
        const Shape& x = a.input();
        require(!x.empty() && x.back() > 0, "layer_norm_stats", "needs a [rows..., features] input");
        return Shape{element_count(x) / x.back(), 2};
      },
      stats_flops, std::nullopt);
}

OpDef group_norm() {
  return norm(
      OpKind::GroupNorm, "group_norm", "",
      [](const OpArgs& a) {
        require_groups(a, "group_norm");
        return a.input();
      },
      // As layer norm: about 8 FLOP per element; scale and shift per channel.
      [](const OpArgs& a, const Shape&) { return 8.0 * elements(a.input()); },
      [](const OpArgs& a, const Shape&) { return 2 * a.input()[1]; }, OpKind::GroupNormStats);
}

// Per sample and group.
OpDef group_norm_stats() {
  return parameterless(
      OpKind::GroupNormStats, "group_norm_stats", "",
      [](const OpArgs& a) {
        require_groups(a, "group_norm_stats");
        return Shape{a.input()[0] * a.attrs.groups, 2};
      },
      stats_flops, std::nullopt);
}

}  // namespace poet::ops
