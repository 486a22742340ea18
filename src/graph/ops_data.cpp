// The input, the reshapes (flatten, the attention heads' split and merge, concatenation), and the kinds of
// backward nodes, which are made by the backward module rather than from rules.
#include <fmt/format.h>

#include "op_defs.h"

namespace poet::ops {
namespace {

// A copy: charged one FLOP per element, like the reference's flatten.
double copy_flops(const OpArgs&, const Shape& out) { return elements(out); }
// The gradient of a reshape is dY reshaped back: one copy.
GradientRule reshape_gradient() { return elementwise_gradient({}, grad_per_input_1); }

}  // namespace

OpDef input() { return {.op = OpKind::Input, .name = "input", .reference_class = "InputLayer"}; }

OpDef flatten() {
  return parameterless(
      OpKind::Flatten, "flatten", "FlattenLayer",
      [](const OpArgs& a) {
        const Shape& in = a.input();
        require(!in.empty() && in[0] > 0, "flatten", "needs a [batch, ...] input");
        return Shape{in[0], element_count(in) / in[0]};
      },
      copy_flops, reshape_gradient());
}

OpDef split_heads() {
  return parameterless(
      OpKind::SplitHeads, "split_heads", "",
      [](const OpArgs& a) {  // [B, S, H * D] -> [B, H, S, D]
        const Shape& in = a.input();
        const int heads = a.attrs.heads;
        require(in.size() == 3 && heads > 0 && in[2] % heads == 0, "split_heads",
                "needs a [batch, seq, heads x head_dim] input");
        return Shape{in[0], heads, in[1], in[2] / heads};
      },
      copy_flops, reshape_gradient());
}

OpDef merge_heads() {
  return parameterless(
      OpKind::MergeHeads, "merge_heads", "",
      [](const OpArgs& a) {  // [B, H, S, D] -> [B, S, H * D]
        const Shape& in = a.input();
        require(in.size() == 4, "merge_heads", "needs a [batch, heads, seq, head_dim] input");
        return Shape{in[0], in[2], in[1] * in[3]};
      },
      copy_flops, reshape_gradient());
}

// Along attrs.axis, any but the batch's: DenseNet's and Inception's channels (axis 1), the
// rows or columns of an image. Each input's gradient is its block of dY, copied out: it
// reads nothing else.
OpDef concat() {
  return parameterless(
      OpKind::Concat, "concat", "",
      [](const OpArgs& a) {
        require(!a.inputs.empty(), "concat", "needs at least one input");
        Shape out = a.input(0);
        const auto axis = static_cast<std::size_t>(a.attrs.axis);
        require(a.attrs.axis >= 1 && axis < out.size(), "concat",
                fmt::format("axis {} is not one of {} besides the batch's (axis 0)", a.attrs.axis,
                            shape_string(out)));
        for (std::size_t i = 1; i < a.inputs.size(); ++i) {
          const Shape& s = a.input(i);
          bool alike = s.size() == out.size();
          for (std::size_t d = 0; alike && d < s.size(); ++d) alike = d == axis || s[d] == out[d];
          require(alike, "concat",
                  fmt::format("input {} has shape {}, which differs from {} outside axis {}", i, shape_string(s),
                              shape_string(a.input(0)), axis));
          out[axis] += s[axis];
        }
        return out;
      },
      copy_flops, reshape_gradient());
}

OpDef chain_gradient() {
  return {.op = OpKind::ChainGradient, .name = "chain_gradient", .reference_class = "GradientLayer"};
}
OpDef grad_input() { return {.op = OpKind::GradInput, .name = "grad_input"}; }
OpDef grad_param() { return {.op = OpKind::GradParam, .name = "grad_param"}; }
OpDef grad_accumulate() { return {.op = OpKind::GradAccumulate, .name = "grad_accumulate"}; }

}  // namespace poet::ops
