// A convolution's input as columns (im2col), the matrix its forward and weight gradient
// multiply, and the adjoint that adds columns back into an input gradient (col2im), for
// kernels_conv.cpp's GEMM paths.
#pragma once

#include <cstdint>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels::detail {

// cols[(c, i, j), (oy, ox)] = x[c, oy stride_h - pad_h + i dilation, ox stride_w - pad_w + j dilation],
// 0 outside, for one image's group; the rows of cols `ld` floats apart (the output positions
// unless given: images side by side pass a multiple).
void im2col(const Conv2dShape& s, const float* x, float* cols, std::int64_t ld = 0);

// The adjoint of im2col: adds each column entry back to the input position it came from.
// dx must be zeroed first; overlapping windows add in a fixed order.
void col2im_add(const Conv2dShape& s, const float* cols, float* dx, std::int64_t ld = 0);

}  // namespace poet::kernels::detail
