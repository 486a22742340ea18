// The one softmax of the runtime: the attention's softmax and the loss's both normalize
// their rows with it, so that the two agree to the bit.
#pragma once

#include <cstdint>

namespace poet::kernels::detail {

// out[j] = exp(in[j] - max) / sum over the row of `cols` floats. Shifting by the row's
// maximum keeps exp from overflowing; the result is unchanged. Returns the maximum and
// the sum of the shifted exponentials (summed in double), from which the loss takes
// log-sum-exp.
struct SoftmaxRow {
  float max = 0;
  double sum = 0;
};
SoftmaxRow softmax_row(const float* in, float* out, std::int64_t cols);

}  // namespace poet::kernels::detail
