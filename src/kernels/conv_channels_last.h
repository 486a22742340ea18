// The small 3x3 convolutions (resnet18_cifar's, whose images go to the threads) on CPUs with
// AVX2 (the weight gradient) or AVX-512 (the forward too), channels-last. oneDNN's products for their weight gradients have 16 rows or
// columns and a long inner dimension, its slowest shape (kernels_conv.cpp). Here each block
// of 16 input channels of x is first copied channels-last ("NHWC", a zero border around each
// image), so that the 16 channels of one pixel are one aligned vector. The weight gradient
// is then dW[co][ci block][tap] += x[pixel + tap][ci block] * dy[co][pixel] over the output
// pixels (pixel + tap at the stride), three output channels x nine taps of accumulators in
// registers; dy is read where it lies. The forward (and a stride-1 input gradient, the
// forward of the swapped convolution) holds output channels in the lanes instead.
#pragma once

#include <cstdint>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels::detail {

// 3x3, strides 1 or 2 (each axis its own), padding 1, undilated, one group, input channels a
// multiple of 16, and a CPU with AVX2 and FMA, or AVX-512F.
bool channels_last_weight_gradient_applies(const Conv2dShape& s);

// The forward the same way, with 32 output channels (two vectors) at 8 pixels of a row in
// registers: where the weight gradient applies, with a multiple of 32 output channels and of
// 8 output columns, on a CPU with AVX-512F.
bool channels_last_forward_applies(const Conv2dShape& s);

// Floats of one thread's buffer for the functions below (its channels-last copy).
std::int64_t channels_last_buffer_elements(const Conv2dShape& s);

// sum [out channels, in channels, 3, 3] = the weight gradient of images [first, end) of x and
// dy, summed in image order (the caller sums the batch's fixed groups of images).
void channels_last_weight_gradient_sum(const Conv2dShape& s, const float* x, const float* dy, std::int64_t first,
                                       std::int64_t end, float* buffer, float* sum);

// y of image n = its convolution of x (no bias), by_tap [in channels x 9 taps, out channels]
// the weights transposed.
void channels_last_forward_image(const Conv2dShape& s, const float* x, const float* by_tap, std::int64_t n,
                                 float* buffer, float* y);

}  // namespace poet::kernels::detail
