// 2-D convolution, NCHW, with stride, padding and groups (depthwise when groups equals the
// channel count). Lowered to GEMMs over an im2col (or im2row) buffer the caller provides.
#pragma once

#include <cstdint>
#include <span>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels {

// Floats of scratch the conv2d kernels use for this shape at the current OMP_NUM_THREADS:
// an im2col buffer per thread (none for a 1x1, stride 1, unpadded convolution, which reads
// its input as is, or a depthwise one) and, where the images are shared between threads,
// partial weight-gradient sums. Given less (down to one thread's share), the kernels use
// fewer threads, with the same results.
std::int64_t conv2d_scratch_elements(const Conv2dShape& s);

// y = conv(x, W) + b. weight [out_c, in_c / groups, kh, kw]; bias [out_c] or empty.
void conv2d_forward(const Conv2dShape& s, std::span<const float> x, std::span<const float> weight,
                    std::span<const float> bias, std::span<float> y, std::span<float> scratch);
// dx: the transposed convolution of dy with W.
void conv2d_backward_input(const Conv2dShape& s, std::span<const float> dy, std::span<const float> weight,
                           std::span<float> dx, std::span<float> scratch);
// dW: the correlation of x with dy, summed over the batch; db: dy summed over batch and
// positions (empty when the layer has no bias).
void conv2d_backward_params(const Conv2dShape& s, std::span<const float> dy, std::span<const float> x,
                            std::span<float> dweight, std::span<float> dbias, std::span<float> scratch);

// The transposed convolution (torch's ConvTranspose2d) of x [batch, in_c, h, w] by weight
// [in_c, out_c / groups, kh, kw], bias [out_c] or empty. `as_conv` is the convolution it
// transposes, from the transposed one's output to its input: in_channels out_c at the
// output's rows and columns, out_channels in_c, the same kernel, stride, pads, groups and
// dilation. Its passes are that convolution's, swapped.
// y = the input gradient of as_conv for dy = x, plus the bias.
void conv_transpose2d_forward(const Conv2dShape& as_conv, std::span<const float> x, std::span<const float> weight,
                              std::span<const float> bias, std::span<float> y, std::span<float> scratch);
// dx = as_conv applied to dy.
void conv_transpose2d_backward_input(const Conv2dShape& as_conv, std::span<const float> dy,
                                     std::span<const float> weight, std::span<float> dx, std::span<float> scratch);
// dW: as_conv's weight gradient with dy as its input and x as its output's gradient; db: dy
// summed over batch and positions (empty when the layer has no bias).
void conv_transpose2d_backward_params(const Conv2dShape& as_conv, std::span<const float> dy,
                                      std::span<const float> x, std::span<float> dweight, std::span<float> dbias,
                                      std::span<float> scratch);

}  // namespace poet::kernels
