// tanh as arithmetic and selects the vectorizer turns into SIMD. std::tanh is a call into
// libm per element: with the GELU built on it, a fifth of the transformer's one-thread step
// (perf, docs/BENCHMARKS.md). Within 2 ulp of the correctly rounded value: tests check a
// dense sample of floats against double precision.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace poet::kernels::detail {

inline float tanh_vectorizable(float x) {
  const float a = std::fabs(x);
  // |x| < 0.625: Cephes's odd polynomial.
  const float z = x * x;
  const float small =
      ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
       3.33332819422e-1f) * z * x + x;
  // Otherwise sign(x) (1 - 2 / (e^{2|x|} + 1)). Past 2|x| = 20 tanh rounds to 1 in float; the
  // clamp also keeps the exponent's integer conversion defined (NaN is restored below).
  const float t = 2.0f * a < 20.0f ? 2.0f * a : 20.0f;
  // e^t = 2^n e^r, n = round(t / ln 2) (t >= 0: +0.5 and truncation round), |r| <= ln(2) / 2,
  // e^r by its Taylor polynomial to r^6 (the next term is about 2^-23 e^r at most).
  const std::int32_t n = static_cast<std::int32_t>(t * 1.44269504089f + 0.5f);
  const float nf = static_cast<float>(n);
  const float r = (t - nf * 0.693359375f) + nf * 2.12194440e-4f;  // ln 2 in two parts: n ln2_hi exact
  const float p =
      1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
  const float e = p * std::bit_cast<float>((n + 127) << 23);
  const float large = 1.0f - 2.0f / (e + 1.0f);
  const float signed_large = x < 0.0f ? -large : large;
  const float y = a < 0.625f ? small : signed_large;
  // NaN stays NaN (the training loop stops on it); -0 stays -0.
  return x != x || x == 0.0f ? x : y;
}

}  // namespace poet::kernels::detail
