// The transposed convolution, by the convolution kernels with their passes swapped: its
// forward is the input gradient of the convolution it transposes, its input gradient that
// convolution's forward, and its weight gradient that convolution's with x and dy swapped.
#include <algorithm>

#include "kernel_checks.h"
#include "parallel_for.h"
#include "poet/kernels/kernels_conv.h"

namespace poet::kernels {
namespace {

// The convolution's passes without a bias: the transposed one's is over the other channels.
Conv2dShape without_bias(Conv2dShape s) {
  s.bias = false;
  return s;
}

}  // namespace

void conv_transpose2d_forward(const Conv2dShape& as_conv, std::span<const float> x, std::span<const float> weight,
                              std::span<const float> bias, std::span<float> y, std::span<float> scratch) {
  conv2d_backward_input(without_bias(as_conv), x, weight, y, scratch);
  if (bias.empty()) return;
  const std::int64_t channels = as_conv.in_channels, plane = as_conv.in_h * as_conv.in_w;
  detail::expect_size("conv_transpose2d_forward", "bias", bias, channels);
  detail::parallel_for(as_conv.batch * channels, plane, [&](std::int64_t i) {
    float* out = y.data() + i * plane;
    const float b = bias[static_cast<std::size_t>(i % channels)];
    std::for_each(out, out + plane, [b](float& v) { v += b; });
  });
}

void conv_transpose2d_backward_input(const Conv2dShape& as_conv, std::span<const float> dy,
                                     std::span<const float> weight, std::span<float> dx, std::span<float> scratch) {
  conv2d_forward(without_bias(as_conv), dy, weight, {}, dx, scratch);
}

void conv_transpose2d_backward_params(const Conv2dShape& as_conv, std::span<const float> dy,
                                      std::span<const float> x, std::span<float> dweight, std::span<float> dbias,
                                      std::span<float> scratch) {
  conv2d_backward_params(without_bias(as_conv), x, dy, dweight, {}, scratch);
  if (dbias.empty()) return;
  const std::int64_t channels = as_conv.in_channels, plane = as_conv.in_h * as_conv.in_w;
  detail::expect_size("conv_transpose2d_backward_params", "dbias", dbias, channels);
  // Each channel summed whole by one thread, over the images in order: the same bits on
  // every thread count.
  detail::parallel_for(channels, as_conv.batch * plane, [&](std::int64_t c) {
    double sum = 0;
    for (std::int64_t n = 0; n < as_conv.batch; ++n) {
      const float* d = dy.data() + (n * channels + c) * plane;
      for (std::int64_t p = 0; p < plane; ++p) sum += d[p];
    }
    dbias[static_cast<std::size_t>(c)] = static_cast<float>(sum);
  });
}

}  // namespace poet::kernels
