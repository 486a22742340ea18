// Batched matmul, softmax over the last axis, and the head permutations.
#include "poet/kernels/kernels_attention.h"

#include <algorithm>
#include <cmath>

#include "gemm.h"
#include "kernel_checks.h"
#include "softmax_row.h"

namespace poet::kernels {
namespace {

using detail::expect_size;
using detail::gemm;

std::int64_t a_size(const MatMulShape& s) { return s.m * s.k; }
std::int64_t b_size(const MatMulShape& s) { return s.k * s.n; }
std::int64_t c_size(const MatMulShape& s) { return s.m * s.n; }

void check_matmul(const char* kernel, const MatMulShape& s, std::span<const float> a, std::span<const float> b,
                  std::span<const float> c) {
  validate(s);
  expect_size(kernel, "A", a, s.batch * a_size(s));
  expect_size(kernel, "B", b, s.batch * b_size(s));
  expect_size(kernel, "C", c, s.batch * c_size(s));
}

}  // namespace

void matmul_forward(const MatMulShape& s, std::span<const float> a, std::span<const float> b, std::span<float> c) {
  check_matmul("matmul_forward", s, a, b, c);
  const std::int64_t ldb = s.transpose_b ? s.k : s.n;
  for (std::int64_t i = 0; i < s.batch; ++i)
    gemm(false, s.transpose_b, s.m, s.n, s.k, s.alpha, a.data() + i * a_size(s), s.k, b.data() + i * b_size(s), ldb,
         0.0f, c.data() + i * c_size(s), s.n);
}

// C = alpha A op(B): dA = alpha dC op(B)^T, which is dC B^T, or dC B when B was transposed.
void matmul_backward_a(const MatMulShape& s, std::span<const float> dc, std::span<const float> b,
                       std::span<float> da) {
  check_matmul("matmul_backward_a", s, da, b, dc);
  const std::int64_t ldb = s.transpose_b ? s.k : s.n;
  for (std::int64_t i = 0; i < s.batch; ++i)
    gemm(false, !s.transpose_b, s.m, s.k, s.n, s.alpha, dc.data() + i * c_size(s), s.n, b.data() + i * b_size(s),
         ldb, 0.0f, da.data() + i * a_size(s), s.k);
}

// dB = alpha A^T dC [k, n], or, when B is stored [n, k], its transpose alpha dC^T A.
void matmul_backward_b(const MatMulShape& s, std::span<const float> dc, std::span<const float> a,
                       std::span<float> db) {
  check_matmul("matmul_backward_b", s, a, db, dc);
  for (std::int64_t i = 0; i < s.batch; ++i) {
    const float* ai = a.data() + i * a_size(s);
    const float* dci = dc.data() + i * c_size(s);
    float* dbi = db.data() + i * b_size(s);
    if (s.transpose_b)
      gemm(true, false, s.n, s.k, s.m, s.alpha, dci, s.n, ai, s.k, 0.0f, dbi, s.k);
    else
      gemm(true, false, s.k, s.n, s.m, s.alpha, ai, s.k, dci, s.n, 0.0f, dbi, s.n);
  }
}

void softmax_forward(const RowsShape& s, std::span<const float> x, std::span<float> y) {
  validate(s);
  expect_size("softmax_forward", "x", x, s.rows * s.cols);
  expect_size("softmax_forward", "y", y, s.rows * s.cols);
  for (std::int64_t r = 0; r < s.rows; ++r) detail::softmax_row(x.data() + r * s.cols, y.data() + r * s.cols, s.cols);
}

void softmax_backward(const RowsShape& s, std::span<const float> dy, std::span<const float> y,
                      std::span<float> dx) {
  validate(s);
  expect_size("softmax_backward", "dy", dy, s.rows * s.cols);
  expect_size("softmax_backward", "y", y, s.rows * s.cols);
  expect_size("softmax_backward", "dx", dx, s.rows * s.cols);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const std::int64_t base = r * s.cols;
    double dot = 0.0;
    for (std::int64_t j = 0; j < s.cols; ++j) dot += static_cast<double>(dy[base + j]) * y[base + j];
    const float d = static_cast<float>(dot);
    for (std::int64_t j = 0; j < s.cols; ++j) dx[base + j] = y[base + j] * (dy[base + j] - d);
  }
}

namespace {

void check_heads(const char* kernel, const HeadsShape& s, std::span<const float> x, std::span<const float> y) {
  validate(s);
  const std::int64_t size = s.batch * s.seq * s.heads * s.head_dim;
  expect_size(kernel, "input", x, size);
  expect_size(kernel, "output", y, size);
}

// Offsets of row (b, t, h) in the [B, S, H, D] layout and in the [B, H, S, D] layout.
std::int64_t merged_offset(const HeadsShape& s, std::int64_t b, std::int64_t t, std::int64_t h) {
  return ((b * s.seq + t) * s.heads + h) * s.head_dim;
}
std::int64_t split_offset(const HeadsShape& s, std::int64_t b, std::int64_t t, std::int64_t h) {
  return ((b * s.heads + h) * s.seq + t) * s.head_dim;
}

}  // namespace

void split_heads(const HeadsShape& s, std::span<const float> x, std::span<float> y) {
  check_heads("split_heads", s, x, y);
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t t = 0; t < s.seq; ++t)
      for (std::int64_t h = 0; h < s.heads; ++h) {
        const float* from = x.data() + merged_offset(s, b, t, h);
        std::copy(from, from + s.head_dim, y.data() + split_offset(s, b, t, h));
      }
}

void merge_heads(const HeadsShape& s, std::span<const float> x, std::span<float> y) {
  check_heads("merge_heads", s, x, y);
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t t = 0; t < s.seq; ++t)
      for (std::int64_t h = 0; h < s.heads; ++h) {
        const float* from = x.data() + split_offset(s, b, t, h);
        std::copy(from, from + s.head_dim, y.data() + merged_offset(s, b, t, h));
      }
}

}  // namespace poet::kernels
