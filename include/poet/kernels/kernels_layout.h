// Kernels that move elements without arithmetic, for the layout operators of ONNX files:
// a permutation of the axes, a block of one axis, learned tokens before a sequence, zero
// padding, nearest-neighbour upsampling.
// Outputs are overwritten; input and output must not overlap.
#pragma once

#include <span>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels {

void permute(const PermuteShape& s, std::span<const float> x, std::span<float> y);
// The permutation that undoes `s`, on s's output: permute(inverse(s), dY) is dX.
PermuteShape inverse(const PermuteShape& s);

void slice_forward(const SliceShape& s, std::span<const float> x, std::span<float> y);
// dx: dY inside the block, zeros elsewhere.
void slice_backward(const SliceShape& s, std::span<const float> dy, std::span<float> dx);

// y: x surrounded by zeros; dx: dY's block where x was.
void pad_forward(const PadShape& s, std::span<const float> x, std::span<float> y);
void pad_backward(const PadShape& s, std::span<const float> dy, std::span<float> dx);

// y: each pixel of x as a factor_h x factor_w block; dx: the sum of each block of dY, in
// row-major order within the block (the order is fixed: results are bit-identical).
void upsample_nearest_forward(const UpsampleShape& s, std::span<const float> x, std::span<float> y);
void upsample_nearest_backward(const UpsampleShape& s, std::span<const float> dy, std::span<float> dx);
// y: each output pixel interpolated between the 4 input pixels around its centre mapped back
// by the factors, (o + 0.5) / factor - 0.5, clamped to the image (torch's bilinear with
// align_corners=False, as it computes it); dx: dY spread back by the same weights, each
// plane by one thread in a fixed order (bit-identical).
void upsample_bilinear_forward(const UpsampleShape& s, std::span<const float> x, std::span<float> y);
void upsample_bilinear_backward(const UpsampleShape& s, std::span<const float> dy, std::span<float> dx);

void prepend_tokens_forward(const TokensShape& s, std::span<const float> x, std::span<const float> tokens,
                            std::span<float> y);
void prepend_tokens_backward_input(const TokensShape& s, std::span<const float> dy, std::span<float> dx);
// dtokens: the tokens' rows of dY summed over the batch, in batch order.
void prepend_tokens_backward_tokens(const TokensShape& s, std::span<const float> dy, std::span<float> dtokens);

}  // namespace poet::kernels
