// The layout operators ONNX files bring: a transpose, a general reshape, a slice of one
// axis, learned tokens prepended to a sequence (a vision transformer's class token), zero
// padding and nearest-neighbour upsampling.
// Each moves elements without arithmetic: one FLOP per element moved, as flatten.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "op_defs.h"

namespace poet::ops {
namespace {

double moved(const OpArgs&, const Shape& out) { return elements(out); }
// The gradient moves dY back (into zeros, for a slice): one FLOP per input element.
GradientRule move_back() { return elementwise_gradient({}, grad_per_input_1); }

}  // namespace

OpDef transpose() {
  return parameterless(
      OpKind::Transpose, "transpose", "",
      [](const OpArgs& a) {
        const Shape& in = a.input();
        const std::vector<std::int64_t>& perm = a.attrs.dims;
        std::vector<std::int64_t> sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        std::vector<std::int64_t> identity(in.size());
        std::iota(identity.begin(), identity.end(), 0);
        require(sorted == identity, "transpose",
                fmt::format("[{}] is not a permutation of the {} axes of {}", fmt::join(perm, ", "), in.size(),
                            shape_string(in)));
        Shape out;
        for (const std::int64_t p : perm) out.push_back(in[static_cast<std::size_t>(p)]);
        return out;
      },
      moved, move_back());
}

OpDef reshape() {
  return parameterless(
      OpKind::Reshape, "reshape", "",
      [](const OpArgs& a) {
        const Shape& to = a.attrs.dims;
        const bool positive = !to.empty() && std::all_of(to.begin(), to.end(), [](std::int64_t d) { return d > 0; });
        require(positive && bounded_element_count(to) == element_count(a.input()), "reshape",
                fmt::format("cannot reshape {} to {}", shape_string(a.input()), shape_string(to)));
        return to;
      },
      moved, move_back());
}

// [begin, end) of axis `axis`; the gradient is dY in that block and zeros around it.
OpDef slice() {
  return parameterless(
      OpKind::Slice, "slice", "",
      [](const OpArgs& a) {
        Shape out = a.input();
        const int axis = a.attrs.axis;
        require(axis >= 0 && static_cast<std::size_t>(axis) < out.size(), "slice",
                fmt::format("axis {} is outside a tensor of shape {}", axis, shape_string(out)));
        const std::int64_t begin = a.attrs.begin, end = a.attrs.end, size = out[static_cast<std::size_t>(axis)];
        require(0 <= begin && begin < end && end <= size, "slice",
                fmt::format("[{}, {}) is not a block of axis {} of size {}", begin, end, axis, size));
        const int step = a.attrs.stride_h;
        require(step >= 1, "slice", fmt::format("step {} is not positive", step));
        out[static_cast<std::size_t>(axis)] = (end - begin + step - 1) / step;
        return out;
      },
      moved, move_back());
}

// x [batch, seq, dim] -> [batch, tokens + seq, dim], the `features` = tokens learned rows
// first. The gradient of x is dY's rows after them; of the tokens, the sum of their rows
// of dY over the batch: neither reads a tensor besides dY.
OpDef prepend_tokens() {
  return {
      .op = OpKind::PrependTokens,
      .name = "prepend_tokens",
      .shape = [](const OpArgs& a) {
        Shape out = a.input();
        require(out.size() == 3 && a.features > 0 && a.features <= kMaxTensorBytes, "prepend_tokens",
                fmt::format("needs a [batch, seq, dim] input and at least one token, not {} and {}",
                            shape_string(out), a.features));
        out[1] += a.features;
        return out;
      },
      .flops = moved,
      .params = [](const OpArgs& a, const Shape&) { return a.features * a.input().back(); },
      .gradient = GradientRule{.input = {}, .params = {}, .input_flops = grad_per_input_1,
                               .param_flops = [](const Node& f, const Node&) { return elements(f.shape); }},
  };
}

// Zeros before and after x along each axis; the gradient is dY's block where x was.
OpDef pad() {
  return parameterless(
      OpKind::Pad, "pad", "",
      [](const OpArgs& a) {
        Shape out = a.input();
        const std::vector<std::int64_t>& pads = a.attrs.dims;
        require(pads.size() == 2 * out.size() &&
                    std::all_of(pads.begin(), pads.end(), [](auto p) { return p >= 0 && p <= kMaxTensorBytes; }),
                "pad", fmt::format("needs a begin and an end, 0 to 2^48, for each of the {} axes of {}", out.size(),
                                   shape_string(out)));
        for (std::size_t d = 0; d < out.size(); ++d) out[d] += pads[d] + pads[d + out.size()];
        return out;
      },
      moved, move_back());
}

// An image's rows and columns enlarged by whole factors, kernel_h and kernel_w.
Shape upsampled(const OpArgs& a, std::string_view op) {
  Shape out = a.input();
  require(out.size() == 4, op, fmt::format("needs an [N, C, H, W] input, not {}", shape_string(out)));
  require(a.attrs.kernel_h >= 1 && a.attrs.kernel_w >= 1 && a.attrs.kernel_h <= 1024 && a.attrs.kernel_w <= 1024, op,
          fmt::format("factors {} x {} are outside 1 to 1024", a.attrs.kernel_h, a.attrs.kernel_w));
  out[2] *= a.attrs.kernel_h;
  out[3] *= a.attrs.kernel_w;
  return out;
}

// Each pixel becomes a kernel_h x kernel_w block of copies; the gradient sums dY's block.
OpDef upsample_nearest() {
  return parameterless(
      OpKind::UpsampleNearest, "upsample_nearest", "",
      [](const OpArgs& a) { return upsampled(a, "upsample_nearest"); }, moved,
      elementwise_gradient({}, [](const Node& f, const Node&) { return elements(f.shape); }));
}

// Each output pixel weighs its 4 nearest inputs: 3 linear interpolations of 3 FLOP each;
// the gradient spreads dY back by the same weights.
OpDef upsample_bilinear() {
  return parameterless(
      OpKind::UpsampleBilinear, "upsample_bilinear", "",
      [](const OpArgs& a) { return upsampled(a, "upsample_bilinear"); },
      [](const OpArgs&, const Shape& out) { return 9.0 * elements(out); },
      elementwise_gradient({}, [](const Node& f, const Node&) { return 8.0 * elements(f.shape); }));
}

}  // namespace poet::ops
