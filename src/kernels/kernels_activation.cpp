// Element-wise activations, add and flatten. Each loop reads element i before writing
// element i, which is what makes the in-place use (output span == input span) safe.
#include "poet/kernels/kernels_activation.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernel_checks.h"
#include "parallel_for.h"
#include "quad.h"
#include "tanh_vectorizable.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

using detail::expect_size;

template <typename F>
void map(const char* kernel, std::span<const float> x, std::span<float> y, F f) {
  expect_size(kernel, "y", y, static_cast<std::int64_t>(x.size()));
  detail::parallel_blocks(static_cast<std::int64_t>(x.size()), [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) y[i] = f(x[i]);
  });
}

// dx[i] = gradient(dy[i], saved[i]), saved being the input or the output as the rule says.
template <typename F>
void map_gradient(const char* kernel, std::span<const float> dy, std::span<const float> saved, std::span<float> dx,
                  F gradient) {
  expect_size(kernel, "saved tensor", saved, static_cast<std::int64_t>(dy.size()));
  expect_size(kernel, "dx", dx, static_cast<std::int64_t>(dy.size()));
  detail::parallel_blocks(static_cast<std::int64_t>(dy.size()), [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) dx[i] = gradient(dy[i], saved[i]);
  });
}

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
constexpr float kSqrtHalf = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

}  // namespace

void relu_forward(std::span<const float> x, std::span<float> y) {
  map("relu_forward", x, y, [](float v) { return v > 0.0f ? v : 0.0f; });
}

void relu6_forward(std::span<const float> x, std::span<float> y) {
  // std::min(std::max(v, 0), 6) written as the selects it is, which the vectorizer takes.
  map("relu6_forward", x, y, [](float v) {
    const float r = v < 0.0f ? 0.0f : v;
    return 6.0f < r ? 6.0f : r;
  });
}

namespace {

// Each block a thread takes is a whole number of mask bytes, each 8 elements of work
// (counted as one, resnet18_cifar's masks at batch 32 stayed on one thread while the other
// waited). passes is called on four elements at once (a Quad, giving a QuadMask) for whole
// bytes, and on one for the tail: element by element, the bits took 2.2% of a
// resnet18_cifar step (perf), now a compare and a movemask per four.
template <typename Passes>
void mask_of(const char* kernel, std::span<const float> y, std::span<std::uint8_t> mask, Passes passes) {
  const auto n = static_cast<std::int64_t>(y.size());
  expect_size(kernel, "mask", mask, mask_bytes(n));
  detail::parallel_blocks(mask_bytes(n), [n, in = y.data(), out = mask.data(), passes](std::int64_t begin,
                                                                                   std::int64_t end) {
    const std::int64_t whole = std::min(end, n / 8);  // bytes with all 8 elements
    for (std::int64_t byte = begin; byte < whole; ++byte) {
      const unsigned low = detail::bits_of(passes(detail::load_quad(in + 8 * byte)));
      const unsigned high = detail::bits_of(passes(detail::load_quad(in + 8 * byte + 4)));
      out[byte] = static_cast<std::uint8_t>(low | high << 4);
    }
    for (std::int64_t byte = std::max(begin, whole); byte < end; ++byte) {
      unsigned bits = 0;
      for (std::int64_t k = 0; 8 * byte + k < n; ++k) bits |= (passes(in[8 * byte + k]) ? 1u : 0u) << k;
      out[byte] = static_cast<std::uint8_t>(bits);
    }
  }, 8);
}

// For each mask byte, its 8 bits as 32-bit lanes of all ones (bit set) or all zeros.
constexpr auto kLaneMasks = [] {
  std::array<std::array<std::uint32_t, 8>, 256> table{};
  for (unsigned byte = 0; byte < 256; ++byte)
    for (unsigned k = 0; k < 8; ++k) table[byte][k] = (byte >> k) & 1u ? 0xFFFFFFFFu : 0u;
  return table;
}();

}  // namespace

std::int64_t mask_bytes(std::int64_t elements) { return (elements + 7) / 8; }

// y > 0 exactly where x > 0.
void relu_mask(std::span<const float> y, std::span<std::uint8_t> mask) {
  mask_of("relu_mask", y, mask, [](auto out) { return out > 0.0f; });
}

// 0 < y < 6 exactly where the input was inside the linear part.
void relu6_mask(std::span<const float> y, std::span<std::uint8_t> mask) {
  mask_of("relu6_mask", y, mask, [](auto out) { return (out > 0.0f) & (out < 6.0f); });
}

void masked_backward(std::span<const float> dy, std::span<const std::uint8_t> mask, std::span<float> dx) {
  const auto n = static_cast<std::int64_t>(dy.size());
  expect_size("masked_backward", "dx", dx, n);
  expect_size("masked_backward", "mask", mask, mask_bytes(n));
  // A select, not dy x 0 or 1 (as PyTorch's threshold_backward): where the gradient passes
  // dy goes through as it is, -0 and NaN included, and elsewhere +0.
  // Over whole bytes of the mask, 8 elements each: dy's bits ANDed with a lane mask of all
  // ones or all zeros (+0 is all zero bits, so this is the select exactly), which the
  // compiler makes two vector ANDs per byte; then the tail.
  detail::parallel_blocks(mask_bytes(n), [n, g = dy.data(), bits = mask.data(), out = dx.data()](std::int64_t begin,
                                                                                                std::int64_t end) {
    const std::int64_t whole = std::min(end, n / 8);
    for (std::int64_t byte = begin; byte < whole; ++byte) {
      const std::array<std::uint32_t, 8>& lanes = kLaneMasks[bits[byte]];
      for (int k = 0; k < 8; ++k)
        out[8 * byte + k] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(g[8 * byte + k]) & lanes[k]);
    }
    for (std::int64_t byte = std::max(begin, whole); byte < end; ++byte)
      for (std::int64_t i = 8 * byte; i < n; ++i) out[i] = (bits[byte] >> (i % 8)) & 1u ? g[i] : 0.0f;
  }, 8);
}

void gelu_forward(std::span<const float> x, std::span<float> y) {
  map("gelu_forward", x, y, [](float v) {
    const float u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
    return 0.5f * v * (1.0f + detail::tanh_vectorizable(u));
  });
}

void gelu_backward(std::span<const float> dy, std::span<const float> x, std::span<float> dx) {
  map_gradient("gelu_backward", dy, x, dx, [](float g, float v) {
    const float u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
    const float t = detail::tanh_vectorizable(u);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
    return g * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
  });
}

// As PyTorch's: x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2.
void gelu_erf_forward(std::span<const float> x, std::span<float> y) {
  map("gelu_erf_forward", x, y, [](float v) { return 0.5f * v * (1.0f + std::erf(v * kSqrtHalf)); });
}

// Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
void gelu_erf_backward(std::span<const float> dy, std::span<const float> x, std::span<float> dx) {
  map_gradient("gelu_erf_backward", dy, x, dx, [](float g, float v) {
    const float cdf = 0.5f * (1.0f + std::erf(v * kSqrtHalf));
    const float pdf = std::exp(-0.5f * v * v) * kInvSqrt2Pi;
    return g * (cdf + v * pdf);
  });
}

void scale_forward(float factor, std::span<const float> x, std::span<float> y) {
  map("scale_forward", x, y, [factor](float v) { return factor * v; });
}

void scale_shift_forward(float factor, float shift, std::span<const float> x, std::span<float> y) {
  if (shift == 0.0f) return scale_forward(factor, x, y);
  map("scale_shift_forward", x, y, [factor, shift](float v) { return factor * v + shift; });
}

void add_parameter_forward(std::span<const float> x, std::span<const float> p, std::span<float> y) {
  expect_size("add_parameter_forward", "y", y, static_cast<std::int64_t>(x.size()));
  POET_CHECK(!p.empty() && x.size() % p.size() == 0, "add_parameter_forward: x is not whole repeats of p");
  for (std::size_t r = 0; r < x.size(); r += p.size())
    for (std::size_t i = 0; i < p.size(); ++i) y[r + i] = x[r + i] + p[i];
}

void add_parameter_backward(std::span<const float> dy, std::span<float> dp) {
  POET_CHECK(!dp.empty() && dy.size() % dp.size() == 0, "add_parameter_backward: dY is not whole repeats of p");
  std::fill(dp.begin(), dp.end(), 0.0f);
  for (std::size_t r = 0; r < dy.size(); r += dp.size())
    for (std::size_t i = 0; i < dp.size(); ++i) dp[i] += dy[r + i];
}

void leaky_relu_forward(float slope, std::span<const float> x, std::span<float> y) {
  map("leaky_relu_forward", x, y, [slope](float v) { return v > 0.0f ? v : slope * v; });
}

void leaky_relu_backward(float slope, std::span<const float> dy, std::span<const float> y, std::span<float> dx) {
  map_gradient("leaky_relu_backward", dy, y, dx, [slope](float g, float out) { return out > 0.0f ? g : slope * g; });
}

void elu_forward(float alpha, std::span<const float> x, std::span<float> y) {
  map("elu_forward", x, y, [alpha](float v) { return v > 0.0f ? v : alpha * std::expm1(v); });
}

void elu_backward(float alpha, std::span<const float> dy, std::span<const float> y, std::span<float> dx) {
  map_gradient("elu_backward", dy, y, dx, [alpha](float g, float out) { return out > 0.0f ? g : g * (out + alpha); });
}

// Above 20, ln(1 + e^x) is x in float (e^-20 is below half an ulp of 20), as torch rounds it.
constexpr float kSoftplusThreshold = 20.0f;

void softplus_forward(std::span<const float> x, std::span<float> y) {
  map("softplus_forward", x, y, [](float v) { return v > kSoftplusThreshold ? v : std::log1p(std::exp(v)); });
}

void softplus_backward(std::span<const float> dy, std::span<const float> x, std::span<float> dx) {
  map_gradient("softplus_backward", dy, x, dx, [](float g, float v) {
    if (v > kSoftplusThreshold) return g;
    const float z = std::exp(v);
    return g * z / (z + 1.0f);
  });
}

void hard_sigmoid_forward(std::span<const float> x, std::span<float> y) {
  map("hard_sigmoid_forward", x, y, [](float v) {
    const float r = v + 3.0f < 0.0f ? 0.0f : v + 3.0f;
    return (6.0f < r ? 6.0f : r) / 6.0f;
  });
}

// 1/6 inside the ramp, 0 < y < 1; torch's hardsigmoid_backward likewise.
void hard_sigmoid_backward(std::span<const float> dy, std::span<const float> y, std::span<float> dx) {
  map_gradient("hard_sigmoid_backward", dy, y, dx,
               [](float g, float out) { return ((out > 0.0f) & (out < 1.0f)) ? g / 6.0f : 0.0f; });
}

void hard_swish_forward(std::span<const float> x, std::span<float> y) {
  map("hard_swish_forward", x, y, [](float v) {
    const float r = v + 3.0f < 0.0f ? 0.0f : v + 3.0f;
    return v * (6.0f < r ? 6.0f : r) / 6.0f;
  });
}

// As torch's hardswish_backward: 0 below -3, x / 3 + 1/2 up to 3, 1 above.
void hard_swish_backward(std::span<const float> dy, std::span<const float> x, std::span<float> dx) {
  map_gradient("hard_swish_backward", dy, x, dx, [](float g, float v) {
    if (v < -3.0f) return 0.0f;
    return v <= 3.0f ? g * (v / 3.0f + 0.5f) : g;
  });
}

namespace {

// Calls f(i, j) for each element i of a, in order, with j the element of b it multiplies.
template <typename F>
void for_each_broadcast(const char* kernel, const BroadcastShape& s, std::size_t a_size, std::size_t b_size, F f) {
  validate(s);
  const auto r = static_cast<std::size_t>(s.rank);
  std::int64_t n = 1, nb = 1;
  std::array<std::int64_t, kMaxPermuteRank> b_stride{}, index{};
  for (std::size_t i = r; i-- > 0;) {
    b_stride[i] = s.b_dims[i] == 1 ? 0 : nb;
    n *= s.dims[i];
    nb *= s.b_dims[i];
  }
  POET_CHECK(static_cast<std::int64_t>(a_size) == n && static_cast<std::int64_t>(b_size) == nb,
             fmt::format("{}: operands of {} and {} elements for shapes of {} and {}", kernel, a_size, b_size, n, nb));
  std::int64_t j = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    f(static_cast<std::size_t>(i), static_cast<std::size_t>(j));
    for (std::size_t d = r; d-- > 0;) {  // the next element: carry through the axes
      j += b_stride[d];
      if (++index[d] < s.dims[d]) break;
      j -= b_stride[d] * s.dims[d];
      index[d] = 0;
    }
  }
}

}  // namespace

void add_broadcast_forward(const BroadcastShape& s, std::span<const float> a, std::span<const float> b,
                           std::span<float> y) {
  expect_size("add_broadcast_forward", "y", y, static_cast<std::int64_t>(a.size()));
  for_each_broadcast("add_broadcast_forward", s, a.size(), b.size(), [&](std::size_t i, std::size_t j) { y[i] = a[i] + b[j]; });
}

namespace {

// The table entry index[j] names.
std::size_t table_entry(const char* kernel, std::span<const float> index, std::size_t j, std::size_t table) {
  const float k = index[j];
  if (!(k >= 0.0f && k < static_cast<float>(table)))
    fail_internal(__FILE__, __LINE__, fmt::format("{}: index {} is outside a table of {}", kernel, k, table));
  return static_cast<std::size_t>(k);
}

}  // namespace

void add_gathered_forward(const BroadcastShape& s, std::span<const float> x, std::span<const float> table,
                          std::span<const float> index, std::span<float> y) {
  expect_size("add_gathered_forward", "y", y, static_cast<std::int64_t>(x.size()));
  for_each_broadcast("add_gathered_forward", s, x.size(), index.size(), [&](std::size_t i, std::size_t j) {
    y[i] = x[i] + table[table_entry("add_gathered_forward", index, j, table.size())];
  });
}

void add_gathered_backward(const BroadcastShape& s, std::span<const float> dy, std::span<const float> index,
                           std::span<float> dtable) {
  std::fill(dtable.begin(), dtable.end(), 0.0f);
  for_each_broadcast("add_gathered_backward", s, dy.size(), index.size(), [&](std::size_t i, std::size_t j) {
    dtable[table_entry("add_gathered_backward", index, j, dtable.size())] += dy[i];
  });
}

void mul_forward(const BroadcastShape& s, std::span<const float> a, std::span<const float> b, std::span<float> y) {
  expect_size("mul_forward", "y", y, static_cast<std::int64_t>(a.size()));
  for_each_broadcast("mul_forward", s, a.size(), b.size(), [&](std::size_t i, std::size_t j) { y[i] = a[i] * b[j]; });
}

void mul_backward_a(const BroadcastShape& s, std::span<const float> dy, std::span<const float> b,
                    std::span<float> da) {
  expect_size("mul_backward_a", "da", da, static_cast<std::int64_t>(dy.size()));
  for_each_broadcast("mul_backward_a", s, dy.size(), b.size(), [&](std::size_t i, std::size_t j) { da[i] = dy[i] * b[j]; });
}

void mul_backward_b(const BroadcastShape& s, std::span<const float> dy, std::span<const float> a,
                    std::span<float> db) {
  expect_size("mul_backward_b", "a", a, static_cast<std::int64_t>(dy.size()));
  std::fill(db.begin(), db.end(), 0.0f);
  for_each_broadcast("mul_backward_b", s, dy.size(), db.size(), [&](std::size_t i, std::size_t j) { db[j] += dy[i] * a[i]; });
}

void prelu_forward(const BroadcastShape& s, std::span<const float> x, std::span<const float> slope,
                   std::span<float> y) {
  expect_size("prelu_forward", "y", y, static_cast<std::int64_t>(x.size()));
  for_each_broadcast("prelu_forward", s, x.size(), slope.size(),
                     [&](std::size_t i, std::size_t j) { y[i] = x[i] > 0.0f ? x[i] : slope[j] * x[i]; });
}

void prelu_backward_input(const BroadcastShape& s, std::span<const float> dy, std::span<const float> x,
                          std::span<const float> slope, std::span<float> dx) {
  expect_size("prelu_backward_input", "x", x, static_cast<std::int64_t>(dy.size()));
  expect_size("prelu_backward_input", "dx", dx, static_cast<std::int64_t>(dy.size()));
  for_each_broadcast("prelu_backward_input", s, dy.size(), slope.size(),
                     [&](std::size_t i, std::size_t j) { dx[i] = x[i] > 0.0f ? dy[i] : slope[j] * dy[i]; });
}

void prelu_backward_slope(const BroadcastShape& s, std::span<const float> dy, std::span<const float> x,
                          std::span<float> dslope) {
  expect_size("prelu_backward_slope", "x", x, static_cast<std::int64_t>(dy.size()));
  std::fill(dslope.begin(), dslope.end(), 0.0f);
  for_each_broadcast("prelu_backward_slope", s, dy.size(), dslope.size(), [&](std::size_t i, std::size_t j) {
    if (!(x[i] > 0.0f)) dslope[j] += dy[i] * x[i];
  });
}

void div_forward(const BroadcastShape& s, std::span<const float> a, std::span<const float> b, std::span<float> y) {
  expect_size("div_forward", "y", y, static_cast<std::int64_t>(a.size()));
  for_each_broadcast("div_forward", s, a.size(), b.size(), [&](std::size_t i, std::size_t j) { y[i] = a[i] / b[j]; });
}

void div_backward_a(const BroadcastShape& s, std::span<const float> dy, std::span<const float> b,
                    std::span<float> da) {
  expect_size("div_backward_a", "da", da, static_cast<std::int64_t>(dy.size()));
  for_each_broadcast("div_backward_a", s, dy.size(), b.size(), [&](std::size_t i, std::size_t j) { da[i] = dy[i] / b[j]; });
}

// d(a / b)/db = -a / b^2, written as -(a / b) / b: the quotient torch's DivBackward computes.
void div_backward_b(const BroadcastShape& s, std::span<const float> dy, std::span<const float> a,
                    std::span<const float> b, std::span<float> db) {
  expect_size("div_backward_b", "a", a, static_cast<std::int64_t>(dy.size()));
  expect_size("div_backward_b", "db", db, static_cast<std::int64_t>(b.size()));
  std::fill(db.begin(), db.end(), 0.0f);
  for_each_broadcast("div_backward_b", s, dy.size(), db.size(),
                     [&](std::size_t i, std::size_t j) { db[j] -= dy[i] * (a[i] / b[j]) / b[j]; });
}

void tanh_forward(std::span<const float> x, std::span<float> y) {
  map("tanh_forward", x, y, [](float v) { return detail::tanh_vectorizable(v); });
}

void tanh_backward(std::span<const float> dy, std::span<const float> y, std::span<float> dx) {
  map_gradient("tanh_backward", dy, y, dx, [](float g, float out) { return g * (1.0f - out * out); });
}

void sigmoid_forward(std::span<const float> x, std::span<float> y) {
  // exp of a non-positive argument only, so that large |x| neither overflows nor loses
  // the small tail to 1 - 1.
  map("sigmoid_forward", x, y, [](float v) {
    if (v >= 0.0f) return 1.0f / (1.0f + std::exp(-v));
    const float e = std::exp(v);
    return e / (1.0f + e);
  });
}

void sigmoid_backward(std::span<const float> dy, std::span<const float> y, std::span<float> dx) {
  map_gradient("sigmoid_backward", dy, y, dx, [](float g, float out) { return g * (out * (1.0f - out)); });
}

void add_forward(std::span<const float> a, std::span<const float> b, std::span<float> y) {
  expect_size("add_forward", "b", b, static_cast<std::int64_t>(a.size()));
  expect_size("add_forward", "y", y, static_cast<std::int64_t>(a.size()));
  detail::parallel_blocks(static_cast<std::int64_t>(a.size()), [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) y[i] = a[i] + b[i];
  });
}

namespace {

void copy(const char* kernel, std::span<const float> from, std::span<float> to) {
  expect_size(kernel, "output", to, static_cast<std::int64_t>(from.size()));
  if (from.data() == to.data()) return;
  std::copy(from.begin(), from.end(), to.begin());
}

}  // namespace

void flatten_forward(std::span<const float> x, std::span<float> y) { copy("flatten_forward", x, y); }
void flatten_backward(std::span<const float> dy, std::span<float> dx) { copy("flatten_backward", dy, dx); }

void concat_forward_part(std::int64_t rows, std::span<const float> x, std::int64_t x_row, std::span<float> y,
                         std::int64_t y_row, std::int64_t y_offset) {
  expect_size("concat_forward", "input", x, rows * x_row);
  expect_size("concat_forward", "output", y, rows * y_row);
  POET_CHECK(y_offset >= 0 && y_offset + x_row <= y_row, "concat_forward: the input's block is outside the row");
  for (std::int64_t b = 0; b < rows; ++b)
    std::copy_n(x.begin() + b * x_row, x_row, y.begin() + b * y_row + y_offset);
}

void concat_backward_part(std::int64_t rows, std::span<const float> dy, std::int64_t y_row, std::int64_t y_offset,
                          std::span<float> dx, std::int64_t x_row) {
  expect_size("concat_backward", "incoming gradient", dy, rows * y_row);
  expect_size("concat_backward", "input gradient", dx, rows * x_row);
  POET_CHECK(y_offset >= 0 && y_offset + x_row <= y_row, "concat_backward: the input's block is outside the row");
  for (std::int64_t b = 0; b < rows; ++b)
    std::copy_n(dy.begin() + b * y_row + y_offset, x_row, dx.begin() + b * x_row);
}

}  // namespace poet::kernels
