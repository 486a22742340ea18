// Softmax cross-entropy, averaged over the rows; the softmax is the attention's (softmax_row.h).
#include "poet/kernels/kernels_loss.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernel_checks.h"
#include "softmax_row.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

using detail::expect_size;

void check(const char* kernel, const RowsShape& s, std::span<const float> tensor,
           std::span<const std::int32_t> labels) {
  validate(s);
  expect_size(kernel, "labels", labels, s.rows);
  expect_size(kernel, "logits or probabilities", tensor, s.rows * s.cols);
  for (std::int64_t r = 0; r < s.rows; ++r)
    if (labels[r] < 0 || labels[r] >= s.cols)
      throw InputError(fmt::format("softmax cross-entropy: row {} has label {}, outside the {} classes [0, {})", r,
                                   labels[r], s.cols, s.cols));
}

}  // namespace

float softmax_cross_entropy_forward(const RowsShape& s, std::span<const float> logits,
                                    std::span<const std::int32_t> labels, std::span<float> probabilities) {
  check("softmax_cross_entropy_forward", s, logits, labels);
  expect_size("softmax_cross_entropy_forward", "probabilities", probabilities, s.rows * s.cols);
  double total = 0.0;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const float* in = logits.data() + r * s.cols;
    const auto [max, sum] = detail::softmax_row(in, probabilities.data() + r * s.cols, s.cols);
    // -log p_label from the logits (log-sum-exp) rather than from the rounded probability,
    // which may be 0 for a confidently wrong row.
    total += static_cast<double>(max) + std::log(sum) - static_cast<double>(in[labels[r]]);
  }
  return static_cast<float>(total / static_cast<double>(s.rows));
}

void softmax_cross_entropy_backward(const RowsShape& s, std::span<const float> probabilities,
                                    std::span<const std::int32_t> labels, std::span<float> dlogits) {
  check("softmax_cross_entropy_backward", s, probabilities, labels);
  expect_size("softmax_cross_entropy_backward", "dlogits", dlogits, s.rows * s.cols);
  const float scale = 1.0f / static_cast<float>(s.rows);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const std::int64_t base = r * s.cols;
    for (std::int64_t j = 0; j < s.cols; ++j) {
      const float target = j == labels[r] ? 1.0f : 0.0f;
      dlogits[base + j] = (probabilities[base + j] - target) * scale;
    }
  }
}

float mean_squared_error_forward(std::span<const float> x, std::span<const float> target, std::span<float> difference) {
  expect_size("mean_squared_error_forward", "target", target, static_cast<std::int64_t>(x.size()));
  expect_size("mean_squared_error_forward", "difference", difference, static_cast<std::int64_t>(x.size()));
  double total = 0.0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    difference[k] = x[k] - target[k];
    total += static_cast<double>(difference[k]) * difference[k];
  }
  return static_cast<float>(total / static_cast<double>(std::max<std::size_t>(x.size(), 1)));
}

void mean_squared_error_backward(std::span<const float> difference, std::span<float> dx) {
  expect_size("mean_squared_error_backward", "dx", dx, static_cast<std::int64_t>(difference.size()));
  const float scale = 2.0f / static_cast<float>(std::max<std::size_t>(difference.size(), 1));
  for (std::size_t k = 0; k < difference.size(); ++k) dx[k] = difference[k] * scale;
}

}  // namespace poet::kernels
