// 3x3 convolutions by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2016): each 2x2 block of outputs from a
// 4x4 block of inputs with 16 multiplications instead of 36. The input tiles and the weights
// are transformed once, the products become 16 GEMMs [out channels, in channels] x [in
// channels, tiles], and the results are transformed back. For the large convolutions that
// run one image at a time (resnet18's at 224x224), the GEMMs over the full im2col took most
// of the step; these do 2.25x fewer multiply-adds (docs/BENCHMARKS.md, "Winograd").
#pragma once

#include <cstdint>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels::detail {

// Whether a convolution goes this way: 3x3, stride 1, undilated, padding 1, one group, and
// large enough per image that it was measured faster than the other paths.
bool winograd_applies(const Conv2dShape& s);
// Whether its weight gradient goes this way too.
bool winograd_weight_gradient_applies(const Conv2dShape& s);

// Floats of scratch for `workers` threads (the transformed weights or the weight gradient's
// sums, then per worker its transformed tiles and products).
std::int64_t winograd_scratch_elements(const Conv2dShape& s, std::int64_t workers);

// y = the convolution of x (no bias), weight [out channels, in channels, 3, 3]. With
// `flipped`, weight is [in channels, out channels, 3, 3] read flipped in space: the weights
// of the convolution whose input gradient this is (s its swapped_channels shape, x its dy).
// The same bits at every thread count: each block of tiles is computed the same way
// whichever thread takes it.
void winograd_convolve(const Conv2dShape& s, const float* x, const float* weight, bool flipped, float* y,
                       float* scratch, std::int64_t workers);

// dweight = the weight gradient [out channels, in channels, 3, 3] from x and dy: per position
// of the tile, the GEMM (A dY A^T) V^T summed over the tiles, then G^T . G. The tiles' sums
// go in fixed groups of blocks, whatever the thread count, so the bits do not depend on it.
void winograd_weight_gradient(const Conv2dShape& s, const float* x, const float* dy, float* dweight, float* scratch,
                              std::int64_t workers);

}  // namespace poet::kernels::detail
