// Kernel bindings of the operators on NCHW images: convolution and pooling.
#include <fmt/format.h>

#include "op_kernel_defs.h"
#include "poet/kernels/kernels.h"
#include "poet/util/error.h"

namespace poet::runtime::detail::bind {

using namespace kernels;  // the kernels this file binds to operators
namespace {

Conv2dShape conv_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  POET_CHECK(x.size() == 4 && f.shape.size() == 4, fmt::format("conv2d '{}' is not NCHW", f.name));
  return {.batch = x[0], .in_channels = x[1], .in_h = x[2], .in_w = x[3], .out_channels = f.shape[1],
          .kernel_h = f.attrs.kernel_h, .kernel_w = f.attrs.kernel_w, .stride_h = f.attrs.stride_h,
          .stride_w = f.attrs.stride_w, .pad_h = f.attrs.pad_h, .pad_w = f.attrs.pad_w, .groups = f.attrs.groups,
          .bias = f.attrs.bias, .dilation = f.attrs.dilation};
}

// A transposed convolution's as the convolution it transposes: from its output [N, out, H',
// W'] to its input [N, in, H, W] (kernels_conv.h).
Conv2dShape transposed_as_conv(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  POET_CHECK(x.size() == 4 && f.shape.size() == 4, fmt::format("conv_transpose2d '{}' is not NCHW", f.name));
  return {.batch = x[0], .in_channels = f.shape[1], .in_h = f.shape[2], .in_w = f.shape[3], .out_channels = x[1],
          .kernel_h = f.attrs.kernel_h, .kernel_w = f.attrs.kernel_w, .stride_h = f.attrs.stride_h,
          .stride_w = f.attrs.stride_w, .pad_h = f.attrs.pad_h, .pad_w = f.attrs.pad_w, .groups = f.attrs.groups,
          .bias = false, .dilation = f.attrs.dilation};
}

// Weights [out, in / groups, kh, kw] (transposed: [in, out / groups, kh, kw]), then the bias
// if the layer has one.
std::size_t conv_bias_floats(const Node& f) { return f.attrs.bias ? static_cast<std::size_t>(f.shape.at(1)) : 0; }

Pool2dShape pool_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  POET_CHECK(x.size() == 4, fmt::format("pool '{}' is not NCHW", f.name));
  return {.batch = x[0], .channels = x[1], .in_h = x[2], .in_w = x[3], .kernel_h = f.attrs.kernel_h,
          .kernel_w = f.attrs.kernel_w, .stride_h = f.attrs.stride_h, .stride_w = f.attrs.stride_w,
          .pad_h = f.attrs.pad_h, .pad_w = f.attrs.pad_w, .ceil_mode = f.attrs.ceil_mode};
}

void validate_pool(const Graph& g, const Node& f) { validate(pool_shape(g, f)); }

// Calls f(Index{}) with the index type of `bytes`-byte max-pool indices.
template <typename F>
void with_index_type(int bytes, F f) {
  switch (bytes) {
    case 1: return f(std::uint8_t{});
    case 2: return f(std::uint16_t{});
    case 4: return f(std::uint32_t{});
    default: POET_CHECK(false, fmt::format("max-pool indices of {} bytes", bytes));
  }
}

// Global average pooling sees x as [batch, channels, spatial].
struct GlobalPoolShape {
  std::int64_t batch, channels, spatial;
};
GlobalPoolShape global_pool_shape(const Graph& g, const Node& f) {
  const Shape& x = input_shape(g, f);
  return {x[0], x[1], element_count(x) / (x[0] * x[1])};
}

}  // namespace

OpKernels conv2d() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            const auto [w, b] = split_tail(c.parameters(), conv_bias_floats(c.forward));
            conv2d_forward(conv_shape(c.g, c.forward), c.in.at(0), w, b, y, c.ctx.scratch);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            const auto weight = split_tail(c.parameters(), conv_bias_floats(c.forward)).head;
            conv2d_backward_input(conv_shape(c.g, c.forward), dy, weight, dx, c.ctx.scratch);
          },
          .parameter_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> grad) {
            const auto [dw, db] = split_tail(grad, conv_bias_floats(c.forward));
            conv2d_backward_params(conv_shape(c.g, c.forward), dy, c.forward_input(0), dw, db, c.ctx.scratch);
          },
          .validate = [](const Graph& g, const Node& f) { validate(conv_shape(g, f)); },
          .scratch = [](const Graph& g, const Node& f) { return conv2d_scratch_elements(conv_shape(g, f)); },
          .parameters = [](const Graph& g, const Node& f) {
            const std::int64_t out = f.shape.at(1);
            const std::int64_t fan_in = input_shape(g, f).at(1) / f.attrs.groups * f.attrs.kernel_h * f.attrs.kernel_w;
            return he_uniform(out * fan_in, f.attrs.bias ? out : 0, fan_in);
          }};
}

OpKernels conv_transpose2d() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            const auto [w, b] = split_tail(c.parameters(), conv_bias_floats(c.forward));
            conv_transpose2d_forward(transposed_as_conv(c.g, c.forward), c.in.at(0), w, b, y, c.ctx.scratch);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            const auto weight = split_tail(c.parameters(), conv_bias_floats(c.forward)).head;
            conv_transpose2d_backward_input(transposed_as_conv(c.g, c.forward), dy, weight, dx, c.ctx.scratch);
          },
          .parameter_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> grad) {
            const auto [dw, db] = split_tail(grad, conv_bias_floats(c.forward));
            conv_transpose2d_backward_params(transposed_as_conv(c.g, c.forward), dy, c.forward_input(0), dw, db,
                                             c.ctx.scratch);
          },
          .validate = [](const Graph& g, const Node& f) {
            const Conv2dShape s = transposed_as_conv(g, f);
            validate(s);
            const Shape& x = input_shape(g, f);
            if (s.out_h() != x[2] || s.out_w() != x[3])
              throw InputError(fmt::format("conv_transpose2d '{}': its output {} does not take its input {} back "
                                           "by the convolution of its kernel, stride and pads",
                                           f.name, shape_string(f.shape), shape_string(x)));
          },
          .scratch = [](const Graph& g, const Node& f) { return conv2d_scratch_elements(transposed_as_conv(g, f)); },
          .parameters = [](const Graph& g, const Node& f) {
            // torch's: the fan-in of the weight's second axis, out / groups x kernel.
            const std::int64_t in = input_shape(g, f).at(1), out = f.shape.at(1);
            const std::int64_t fan_in = out / f.attrs.groups * f.attrs.kernel_h * f.attrs.kernel_w;
            return he_uniform(in * fan_in, f.attrs.bias ? out : 0, fan_in);
          }};
}

// Max-pool's gradient reads the arg-max indices the max_pool_indices node kept.
OpKernels max_pool2d() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            max_pool2d_forward(pool_shape(c.g, c.forward), c.in.at(0), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            with_index_type(c.saved_node().element_bytes, [&]<typename Index>(Index) {
              max_pool2d_backward(pool_shape(c.g, c.forward), dy, stored_as<Index>(c.saved(), std::ssize(dy)), dx);
            });
          },
          .validate = validate_pool};
}

// Made with its max-pool's attributes, from its input.
OpKernels max_pool_indices() {
  return {.forward = [](const KernelCall& c, std::span<float> out) {
            with_index_type(c.node.element_bytes, [&]<typename Index>(Index) {
              max_pool2d_indices(pool_shape(c.g, c.node), c.in.at(0),
                                 stored_as<Index>(out, element_count(c.node.shape)));
            });
          },
          .validate = validate_pool};
}

OpKernels avg_pool2d() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            avg_pool2d_forward(pool_shape(c.g, c.forward), c.in.at(0), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            avg_pool2d_backward(pool_shape(c.g, c.forward), dy, dx);
          },
          .validate = validate_pool};
}

OpKernels global_avg_pool() {
  return {.forward = [](const KernelCall& c, std::span<float> y) {
            const GlobalPoolShape s = global_pool_shape(c.g, c.forward);
            global_avg_pool_forward(s.batch, s.channels, s.spatial, c.in.at(0), y);
          },
          .input_gradient = [](const KernelCall& c, std::span<const float> dy, std::span<float> dx) {
            const GlobalPoolShape s = global_pool_shape(c.g, c.forward);
            global_avg_pool_backward(s.batch, s.channels, s.spatial, dy, dx);
          }};
}

}  // namespace poet::runtime::detail::bind
