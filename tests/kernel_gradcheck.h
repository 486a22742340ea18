// Test helpers for the runtime kernels: random tensors, and a check of a backward kernel
// against central finite differences of a scalar function of the forward output.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace poet::kernels::testing {

inline std::vector<float> random_values(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Values whose magnitude lies in [lo, hi] with random signs: kept clear of a kink at 0.
inline std::vector<float> away_from_zero(std::size_t n, std::uint32_t seed, float lo, float hi) {
  std::vector<float> v = random_values(n, seed, lo, hi);
  std::mt19937 gen(seed + 1);
  for (float& x : v)
    if (gen() % 2) x = -x;
  return v;
}

// Distinct values 0.05 apart, shuffled: no two elements of a max-pool window are within a
// finite-difference step of each other.
inline std::vector<float> distinct_values(std::size_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.05f * static_cast<float>(i) - 0.025f * static_cast<float>(n);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

// L = sum(out * weights), in double so that the finite differences lose nothing more.
inline double weighted_sum(std::span<const float> out, std::span<const float> weights) {
  double sum = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) sum += static_cast<double>(out[i]) * weights[i];
  return sum;
}

// Runs the forward into `out` for the input `in`.
using ForwardFn = std::function<void(std::span<const float> in, std::span<float> out)>;

// Checks `analytic` against dL/d(in) by central differences of L = sum(forward(in) *
// weights): the backward kernel must have been given dy = weights. The step is measured
// as the float inputs actually differ, not as h.
inline ::testing::AssertionResult gradient_matches(const ForwardFn& forward, std::vector<float> in,
                                                   std::size_t out_size, std::span<const float> weights,
                                                   std::span<const float> analytic, float h = 1e-2f,
                                                   double rel_tol = 1e-2, double abs_tol = 1e-3) {
  if (analytic.size() != in.size())
    return ::testing::AssertionFailure() << "analytic gradient has " << analytic.size() << " elements, input "
                                         << in.size();
  std::vector<float> out(out_size);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const float original = in[i];
    const float plus = original + h, minus = original - h;
    in[i] = plus;
    forward(in, out);
    const double l_plus = weighted_sum(out, weights);
    in[i] = minus;
    forward(in, out);
    const double l_minus = weighted_sum(out, weights);
    in[i] = original;
    const double numeric = (l_plus - l_minus) / (static_cast<double>(plus) - static_cast<double>(minus));
    const double error = std::abs(numeric - analytic[i]);
    if (error > abs_tol + rel_tol * std::max(std::abs(numeric), std::abs(static_cast<double>(analytic[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": analytic " << analytic[i]
                                           << ", finite differences " << numeric;
  }
  return ::testing::AssertionSuccess();
}

inline bool bit_identical(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
           return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
         });
}

}  // namespace poet::kernels::testing
