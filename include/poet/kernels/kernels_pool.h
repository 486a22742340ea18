// Max, average and global average pooling over NCHW images.
#pragma once

#include <cstdint>
#include <span>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels {

// Padding never wins a max. Of equal values in a window, the first in row-major order is
// the maximum, and the backward routes the gradient to it alone.
void max_pool2d_forward(const Pool2dShape& s, std::span<const float> x, std::span<float> y);
// Finds each window's maximum again from x, as the gradient rule says (no stored indices).
void max_pool2d_backward(const Pool2dShape& s, std::span<const float> dy, std::span<const float> x,
                         std::span<float> dx);

void avg_pool2d_forward(const Pool2dShape& s, std::span<const float> x, std::span<float> y);
void avg_pool2d_backward(const Pool2dShape& s, std::span<const float> dy, std::span<float> dx);

// [batch, channels, spatial] -> [batch, channels].
void global_avg_pool_forward(std::int64_t batch, std::int64_t channels, std::int64_t spatial,
                             std::span<const float> x, std::span<float> y);
void global_avg_pool_backward(std::int64_t batch, std::int64_t channels, std::int64_t spatial,
                              std::span<const float> dy, std::span<float> dx);

}  // namespace poet::kernels
