// Linear layers and embeddings.
#include "poet/kernels/kernels_dense.h"

#include <fmt/format.h>

#include <algorithm>

#include "gemm.h"
#include "kernel_checks.h"
#include "poet/util/error.h"

namespace poet::kernels {

using detail::expect_size;
using detail::gemm;

void linear_forward(const LinearShape& s, std::span<const float> x, std::span<const float> weight,
                    std::span<const float> bias, std::span<float> y) {
  validate(s);
  expect_size("linear_forward", "x", x, s.rows * s.in_features);
  expect_size("linear_forward", "weight", weight, s.out_features * s.in_features);
  expect_size("linear_forward", "bias", bias, s.bias ? s.out_features : 0);
  expect_size("linear_forward", "y", y, s.rows * s.out_features);
  gemm(false, true, s.rows, s.out_features, s.in_features, 1.0f, x.data(), s.in_features, weight.data(),
       s.in_features, 0.0f, y.data(), s.out_features);
  if (!s.bias) return;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    float* row = y.data() + r * s.out_features;
    for (std::int64_t o = 0; o < s.out_features; ++o) row[o] += bias[o];
  }
}

void linear_backward_input(const LinearShape& s, std::span<const float> dy, std::span<const float> weight,
                           std::span<float> dx) {
  validate(s);
  expect_size("linear_backward_input", "dy", dy, s.rows * s.out_features);
  expect_size("linear_backward_input", "weight", weight, s.out_features * s.in_features);
  expect_size("linear_backward_input", "dx", dx, s.rows * s.in_features);
  gemm(false, false, s.rows, s.in_features, s.out_features, 1.0f, dy.data(), s.out_features, weight.data(),
       s.in_features, 0.0f, dx.data(), s.in_features);
}

void linear_backward_params(const LinearShape& s, std::span<const float> dy, std::span<const float> x,
                            std::span<float> dweight, std::span<float> dbias) {
  validate(s);
  expect_size("linear_backward_params", "dy", dy, s.rows * s.out_features);
  expect_size("linear_backward_params", "x", x, s.rows * s.in_features);
  expect_size("linear_backward_params", "dweight", dweight, s.out_features * s.in_features);
  expect_size("linear_backward_params", "dbias", dbias, s.bias ? s.out_features : 0);
  gemm(true, false, s.out_features, s.in_features, s.rows, 1.0f, dy.data(), s.out_features, x.data(),
       s.in_features, 0.0f, dweight.data(), s.in_features);
  if (!s.bias) return;
  // Row by row so that the reads are contiguous; the order of the sum is fixed.
  std::fill(dbias.begin(), dbias.end(), 0.0f);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const float* row = dy.data() + r * s.out_features;
    for (std::int64_t o = 0; o < s.out_features; ++o) dbias[o] += row[o];
  }
}

namespace {

std::int64_t checked_id(const EmbeddingShape& s, std::span<const std::int32_t> ids, std::int64_t t) {
  const std::int64_t id = ids[t];
  if (id < 0 || id >= s.vocab)
    throw InputError(fmt::format("embedding: token {} has id {}, outside the vocabulary [0, {})", t, id, s.vocab));
  return id;
}

}  // namespace

void embedding_forward(const EmbeddingShape& s, std::span<const std::int32_t> ids, std::span<const float> table,
                       std::span<float> y) {
  validate(s);
  expect_size("embedding_forward", "ids", ids, s.tokens);
  expect_size("embedding_forward", "table", table, s.vocab * s.dim);
  expect_size("embedding_forward", "y", y, s.tokens * s.dim);
  for (std::int64_t t = 0; t < s.tokens; ++t) {
    const float* row = table.data() + checked_id(s, ids, t) * s.dim;
    std::copy(row, row + s.dim, y.data() + t * s.dim);
  }
}

void embedding_backward_table(const EmbeddingShape& s, std::span<const std::int32_t> ids,
                              std::span<const float> dy, std::span<float> dtable) {
  validate(s);
  expect_size("embedding_backward_table", "ids", ids, s.tokens);
  expect_size("embedding_backward_table", "dy", dy, s.tokens * s.dim);
  expect_size("embedding_backward_table", "dtable", dtable, s.vocab * s.dim);
  std::fill(dtable.begin(), dtable.end(), 0.0f);
  for (std::int64_t t = 0; t < s.tokens; ++t) {
    float* row = dtable.data() + checked_id(s, ids, t) * s.dim;
    const float* grad = dy.data() + t * s.dim;
    for (std::int64_t d = 0; d < s.dim; ++d) row[d] += grad[d];
  }
}

}  // namespace poet::kernels
