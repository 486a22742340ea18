// Normalizations. Each norm is one node in the forward graph; the autodiff backward lowers
// it into a statistics node (per-group mean and inverse standard deviation) and the norm
// reading them, so that its gradient reads the statistics rather than the output.
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

// Mean and inverse standard deviation per group, [groups, 2]: a sum, a sum of squares and
// the normalization's share, about 3 FLOP per element of x.
double stats_flops(const OpArgs& a, const Shape&) { return 3.0 * elements(a.input()); }

}  // namespace

OpDef batch_norm2d() {
  return {.op = OpKind::BatchNorm2d,
          .name = "batch_norm2d",
          .reference_class = "BatchNorm2d",
          .shape = [](const OpArgs& a) {
            require(a.input().size() >= 2, "batch_norm2d", "needs a [batch, channels, ...] input");
            return a.input();
          },
          // Reference: 2 FLOP per element, and 4 parameters per channel (scale, shift and
          // the running statistics).
          .flops = [](const OpArgs& a, const Shape&) { return 2.0 * elements(a.input()); },
          .params = [](const OpArgs& a, const Shape&) { return 4 * a.input()[1]; },
          .gradient = norm_gradient(),
          .statistics = OpKind::BatchNormStats};
}

OpDef batch_norm_stats() {
  return {.op = OpKind::BatchNormStats,
          .name = "batch_norm_stats",
          .shape = [](const OpArgs& a) {  // per channel
            require(a.input().size() >= 2, "batch_norm_stats", "needs a [batch, channels, ...] input");
            return Shape{a.input()[1], 2};
          },
          .flops = stats_flops,
          .params = no_params};
}

OpDef layer_norm() {
  return {.op = OpKind::LayerNorm,
          .name = "layer_norm",
          .shape = [](const OpArgs& a) {
            require(!a.input().empty(), "layer_norm", "needs a [rows..., features] input");
            return a.input();
          },
          // Mean, variance, normalize, scale and shift: about 8 FLOP per element.
          .flops = [](const OpArgs& a, const Shape&) { return 8.0 * elements(a.input()); },
          .params = [](const OpArgs& a, const Shape&) { return 2 * a.input().back(); },
          .gradient = norm_gradient(),
          .statistics = OpKind::LayerNormStats};
}

OpDef layer_norm_stats() {
  return {.op = OpKind::LayerNormStats,
          .name = "layer_norm_stats",
          .shape = [](const OpArgs& a) {  // per row
            const Shape& x = a.input();
            require(!x.empty() && x.back() > 0, "layer_norm_stats", "needs a [rows..., features] input");
            return Shape{element_count(x) / x.back(), 2};
          },
          .flops = stats_flops,
          .params = no_params};
}

}  // namespace poet::ops
