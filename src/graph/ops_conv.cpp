// Operators on NCHW images: convolution and pooling.
#include "op_defs.h"

namespace poet::ops {
namespace {

void require_nchw(const OpArgs& a, std::string_view op) {
  require(a.input().size() == 4, op, "needs an NCHW input");
}

// Output rows or columns of a window sliding over `in` padded by `pad` on both sides.
// With `ceil`, rounded up as PyTorch's ceil_mode, less a last window that would start
// beyond the image and its leading padding (the runtime's Pool2dShape counts alike).
std::int64_t window_positions(std::int64_t in, std::int64_t kernel, int stride, int pad, bool ceil = false) {
  const std::int64_t span = in - kernel + 2 * pad;
  std::int64_t out = (ceil ? span + stride - 1 : span) / stride + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

Shape pool_shape(const OpArgs& a) {
  require_nchw(a, "pool2d");
  require(a.attrs.stride_h > 0 && a.attrs.stride_w > 0, "pool2d", "needs positive strides");
  const Shape& in = a.input();
  const OpAttrs& t = a.attrs;
  return {in[0], in[1], window_positions(in[2], t.kernel_h, t.stride_h, t.pad_h, t.ceil_mode),
          window_positions(in[3], t.kernel_w, t.stride_w, t.pad_w, t.ceil_mode)};
}

// The reference's formula, max and average alike.
double pool_flops(const OpArgs& a, const Shape& out) {
  return 2.0 * a.attrs.kernel_h * a.attrs.kernel_w * elements(out);
}

// The reference's convolution: 2 x k^2 x |input| x out_channels + |output| (it charges
// every output channel against every input position; kept as is for parity). Grouped
// convolutions see 1/groups of the input channels.
double convolution_flops(const OpArgs& a, const Shape& out) {
  return 2.0 * a.attrs.kernel_h * a.attrs.kernel_w * elements(a.input()) * static_cast<double>(a.features) /
             a.attrs.groups +
         elements(out);
}

// A convolution's or its transpose's input: NCHW, channels the groups divide (in and out),
// positive strides and dilation.
void require_convolution(const OpArgs& a, std::string_view op) {
  require_nchw(a, op);
  const OpAttrs& t = a.attrs;
  require(t.groups > 0 && a.input()[1] % t.groups == 0 && a.features % t.groups == 0, op,
          "groups must divide channels");
  require(t.stride_h > 0 && t.stride_w > 0, op, "needs positive strides");
  require(t.dilation > 0 && t.dilation <= (1 << 20), op, "needs a dilation of 1 to 2^20");
}

// The weight gradient reads x and dy; the input gradient dy and the weight.
GradientRule convolution_gradient() {
  return {.params = {.all_inputs = true}, .input_flops = grad_like_forward, .param_flops = grad_like_forward};
}

}  // namespace

OpDef conv2d() {
  return {
      .op = OpKind::Conv2d,
      .name = "conv2d",
      .reference_class = "Conv2dLayer",
      .shape = [](const OpArgs& a) {
        require_convolution(a, "conv2d");
        const Shape& in = a.input();
        const OpAttrs& t = a.attrs;
        // Dilated, the taps spread over dilation (kernel - 1) + 1 rows and columns.
        const auto span = [&](int kernel) { return std::int64_t{t.dilation} * (kernel - 1) + 1; };
        require(in[2] + 2 * t.pad_h >= span(t.kernel_h) && in[3] + 2 * t.pad_w >= span(t.kernel_w), "conv2d",
                "the (dilated) kernel does not fit the padded input");
        return Shape{in[0], a.features, window_positions(in[2], span(t.kernel_h), t.stride_h, t.pad_h),
                     window_positions(in[3], span(t.kernel_w), t.stride_w, t.pad_w)};
      },
      .flops = convolution_flops,
      .params = [](const OpArgs& a, const Shape&) {
        return a.features * (a.input()[1] / a.attrs.groups) * a.attrs.kernel_h * a.attrs.kernel_w +
               (a.attrs.bias ? a.features : 0);
      },
      .gradient = convolution_gradient(),
  };
}

// The convolution's transpose: each input pixel spreads its channels over a window of the
// output (every stride-th, per axis), which is (in - 1) stride - 2 pad + dilation (kernel - 1) + 1
// rows and columns, plus the output padding (torch's output_padding: rows and columns on
// the far side that only the bias reaches). It is the input gradient of the convolution
// from its output to its input, and is computed so (the runtime's kernels).
OpDef conv_transpose2d() {
  return {
      .op = OpKind::ConvTranspose2d,
      .name = "conv_transpose2d",
      .shape = [](const OpArgs& a) {
        require_convolution(a, "conv_transpose2d");
        const Shape& in = a.input();
        const OpAttrs& t = a.attrs;
        require(t.dims.empty() || t.dims.size() == 2, "conv_transpose2d",
                "takes its output padding as dims [rows, columns]");
        const std::int64_t pad_rows = t.dims.empty() ? 0 : t.dims[0], pad_columns = t.dims.empty() ? 0 : t.dims[1];
        require(pad_rows >= 0 && pad_rows < t.stride_h && pad_columns >= 0 && pad_columns < t.stride_w,
                "conv_transpose2d", "takes an output padding from 0 to the axis's stride less 1");
        const auto extent = [&](std::int64_t in, int kernel, int stride, int pad, std::int64_t extra) {
          return (in - 1) * stride - 2 * pad + std::int64_t{t.dilation} * (kernel - 1) + 1 + extra;
        };
        const std::int64_t rows = extent(in[2], t.kernel_h, t.stride_h, t.pad_h, pad_rows);
        const std::int64_t columns = extent(in[3], t.kernel_w, t.stride_w, t.pad_w, pad_columns);
        require(t.kernel_h > 0 && t.kernel_w > 0 && rows > 0 && columns > 0, "conv_transpose2d",
                "its padding leaves no output");
        return Shape{in[0], a.features, rows, columns};
      },
      .flops = convolution_flops,  // exact here: each input position meets kernel x out / groups weights
      .params = [](const OpArgs& a, const Shape&) {
        return a.input()[1] * (a.features / a.attrs.groups) * a.attrs.kernel_h * a.attrs.kernel_w +
               (a.attrs.bias ? a.features : 0);
      },
      .gradient = convolution_gradient(),
  };
}

// Max-pool routes dY to the arg-max of each window, which the backward keeps
// (max_pool_indices) instead of x.
OpDef max_pool2d() {
  OpDef d = parameterless(OpKind::MaxPool2d, "max_pool2d", "MaxPool2d", pool_shape, pool_flops,
                          elementwise_gradient({.saved = true}, grad_per_input_2));
  d.saved = SavedForBackward{.op = OpKind::MaxPoolIndices, .reads_output = false};
  return d;
}

// Per output of the max-pool (its rules see the pool's output and attributes; its node reads
// the pool's input), the position of its window's maximum within the window, row-major
// from the window's top-left corner (padding included): the smallest unsigned integer that
// holds kernel_h x kernel_w positions (a byte up to 16x16 windows). It finds the maximum as
// the pool did: the pool's FLOPs.
OpDef max_pool_indices() {
  OpDef d = parameterless(OpKind::MaxPoolIndices, "max_pool_indices", "", same_shape, pool_flops, std::nullopt);
  d.element_bytes = [](const OpAttrs& t) {
    const std::int64_t positions = std::int64_t{t.kernel_h} * t.kernel_w;
    return positions <= 256 ? 1 : positions <= 65536 ? 2 : 4;
  };
  return d;
}

// Every window is divided by the kernel's area, padding counted: a partial window of
// ceil_mode would need another divisor, so average pooling rounds down only.
OpDef avg_pool2d() {
  return parameterless(
      OpKind::AvgPool2d, "avg_pool2d", "AvgPool2d",
      [](const OpArgs& a) {
        require(!a.attrs.ceil_mode, "avg_pool2d", "rounds its output size down (no ceil_mode)");
        return pool_shape(a);
      },
      pool_flops, elementwise_gradient({}, grad_per_input_1));
}

OpDef global_avg_pool() {
  return parameterless(
      OpKind::GlobalAvgPool, "global_avg_pool", "GlobalAvgPool",
      [](const OpArgs& a) {
        require(a.input().size() >= 2, "global_avg_pool", "needs a [batch, channels, ...] input");
        return Shape{a.input()[0], a.input()[1]};
      },
      [](const OpArgs& a, const Shape&) { return 2.0 * elements(a.input()); },
      elementwise_gradient({}, grad_per_input_1));
}

}  // namespace poet::ops
