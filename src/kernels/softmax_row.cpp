#include "softmax_row.h"

#include <cmath>

namespace poet::kernels::detail {

SoftmaxRow softmax_row(const float* in, float* out, std::int64_t cols) {
  float max = in[0];
  for (std::int64_t j = 1; j < cols; ++j) max = in[j] > max ? in[j] : max;
  double sum = 0.0;
  for (std::int64_t j = 0; j < cols; ++j) {
    out[j] = std::exp(in[j] - max);
    sum += out[j];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (std::int64_t j = 0; j < cols; ++j) out[j] *= inv;
  return {max, sum};
}

}  // namespace poet::kernels::detail
