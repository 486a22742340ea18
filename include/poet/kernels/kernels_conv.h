// 2-D convolution, NCHW, with stride, padding and groups (depthwise when groups equals the
// channel count). Lowered to GEMMs over an im2col buffer the caller provides.
#pragma once

#include <cstdint>
#include <span>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels {

// Floats of scratch every conv2d kernel needs for this shape (0 for a 1x1, stride 1,
// unpadded convolution, which reads its input as is).
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

}  // namespace poet::kernels
