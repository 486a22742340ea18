// Depthwise convolutions (one input and one output channel per group), computed directly: as
// GEMMs they are one-row products, one BLAS call per channel and image, that ran several
// times slower than these loops.
#pragma once

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels::detail {

// y = bias + the convolution of x; bias may be null when the shape has none.
void depthwise_forward(const Conv2dShape& s, const float* x, const float* weight, const float* bias, float* y);
void depthwise_backward_input(const Conv2dShape& s, const float* dy, const float* weight, float* dx);
void depthwise_backward_weight(const Conv2dShape& s, const float* dy, const float* x, float* dweight);

}  // namespace poet::kernels::detail
