// Max, average and global average pooling over NCHW images.
#pragma once

#include <cstdint>
#include <span>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels {

// Padding never wins a max. Of equal values in a window, the first in row-major order is
// the maximum, and the backward routes the gradient to it alone.
void max_pool2d_forward(const Pool2dShape& s, std::span<const float> x, std::span<float> y);
// What max-pool's backward keeps of x (the graph's max_pool_indices): per output, the
// position of its window's maximum (the one max_pool2d_forward takes) within the window,
// (iy - top) x kernel_w + (ix - left), where (top, left) is the window's corner with the
// padding. Index: std::uint8_t, std::uint16_t or std::uint32_t, the smallest that holds
// kernel_h x kernel_w positions (InputError if it does not).
template <typename Index>
void max_pool2d_indices(const Pool2dShape& s, std::span<const float> x, std::span<Index> indices);
// Routes each dY to its window's arg-max, in the forward's window order: the gradient,
// bit for bit as if each maximum were found again from x.
template <typename Index>
void max_pool2d_backward(const Pool2dShape& s, std::span<const float> dy, std::span<const Index> indices,
                         std::span<float> dx);

void avg_pool2d_forward(const Pool2dShape& s, std::span<const float> x, std::span<float> y);
void avg_pool2d_backward(const Pool2dShape& s, std::span<const float> dy, std::span<float> dx);

// [batch, channels, spatial] -> [batch, channels].
void global_avg_pool_forward(std::int64_t batch, std::int64_t channels, std::int64_t spatial,
                             std::span<const float> x, std::span<float> y);
void global_avg_pool_backward(std::int64_t batch, std::int64_t channels, std::int64_t spatial,
                              std::span<const float> dy, std::span<float> dx);

}  // namespace poet::kernels
