// The pieces of attention: batched matmul (GEMMs through CBLAS), softmax over the last
// axis, and the head split / merge permutations.
#pragma once

#include <span>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels {

void matmul_forward(const MatMulShape& s, std::span<const float> a, std::span<const float> b, std::span<float> c);
// The gradient of A (slot 0) reads B; the gradient of B (slot 1) reads A.
void matmul_backward_a(const MatMulShape& s, std::span<const float> dc, std::span<const float> b,
                       std::span<float> da);
void matmul_backward_b(const MatMulShape& s, std::span<const float> dc, std::span<const float> a,
                       std::span<float> db);

void softmax_forward(const RowsShape& s, std::span<const float> x, std::span<float> y);
// dx = y (dy - sum(dy y)) per row: reads the output.
void softmax_backward(const RowsShape& s, std::span<const float> dy, std::span<const float> y,
                      std::span<float> dx);

// [batch, seq, heads x head_dim] -> [batch, heads, seq, head_dim] and back. Each one's
// backward is the other applied to the gradient.
void split_heads(const HeadsShape& s, std::span<const float> x, std::span<float> y);
void merge_heads(const HeadsShape& s, std::span<const float> x, std::span<float> y);
inline void split_heads_backward(const HeadsShape& s, std::span<const float> dy, std::span<float> dx) {
  merge_heads(s, dy, dx);
}
inline void merge_heads_backward(const HeadsShape& s, std::span<const float> dy, std::span<float> dx) {
  split_heads(s, dy, dx);
}

}  // namespace poet::kernels
