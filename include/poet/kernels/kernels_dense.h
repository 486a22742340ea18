// Linear layers and embeddings. The GEMMs go through CBLAS.
//
// Every kernel here and in the other kernels_*.h headers: fp32, no allocation, outputs
// overwritten (never accumulated into), and the same inputs give bit-identical outputs.
// A parameter gradient is written whole, for the caller to place in the gradient region.
#pragma once

#include <cstdint>
#include <span>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels {

// y = x W^T + b. weight [out, in]; bias [out], empty when the layer has none.
void linear_forward(const LinearShape& s, std::span<const float> x, std::span<const float> weight,
                    std::span<const float> bias, std::span<float> y);
// dx = dy W.
void linear_backward_input(const LinearShape& s, std::span<const float> dy, std::span<const float> weight,
                           std::span<float> dx);
// dW = dy^T x; db = the sum of dy over the rows (empty when the layer has no bias).
void linear_backward_params(const LinearShape& s, std::span<const float> dy, std::span<const float> x,
                            std::span<float> dweight, std::span<float> dbias);

// y[t] = table[ids[t]]. An id outside [0, vocab) is bad data: InputError.
void embedding_forward(const EmbeddingShape& s, std::span<const std::int32_t> ids, std::span<const float> table,
                       std::span<float> y);
// dtable = the scatter-add of dy's rows into the rows of their ids, in token order.
void embedding_backward_table(const EmbeddingShape& s, std::span<const std::int32_t> ids,
                              std::span<const float> dy, std::span<float> dtable);

}  // namespace poet::kernels
