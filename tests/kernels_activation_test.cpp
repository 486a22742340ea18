// Element-wise activations, add and flatten.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_activation.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

using testing::away_from_zero;
using testing::gradient_matches;
using testing::random_values;

using Forward = void (*)(std::span<const float>, std::span<float>);
using Backward = void (*)(std::span<const float>, std::span<const float>, std::span<float>);

// backward_reads_output: the rule hands the backward the output (ReLU, tanh, ...) rather
// than the input (GELU).
void check_activation(Forward forward, Backward backward, bool backward_reads_output, std::vector<float> x) {
  const std::size_t n = x.size();
  const std::vector<float> dy = random_values(n, 99);
  std::vector<float> y(n), dx(n);
  forward(x, y);
  backward(dy, backward_reads_output ? std::span<const float>(y) : std::span<const float>(x), dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { forward(in, out); }, x, n, dy, dx, 1e-3f));
}

// ReLU's and ReLU6's backward as the runtime takes it: the mask of the output, then dY
// through the mask.
template <void (*mask_of)(std::span<const float>, std::span<std::uint8_t>)>
void backward_through_mask(std::span<const float> dy, std::span<const float> y, std::span<float> dx) {
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(mask_bytes(std::ssize(y))));
  mask_of(y, mask);
  masked_backward(dy, mask, dx);
}

TEST(KernelActivation, ReluGradientMatchesFiniteDifferences) {
  check_activation(relu_forward, backward_through_mask<relu_mask>, true, away_from_zero(30, 1, 0.05f, 2.0f));
}

TEST(KernelActivation, Relu6GradientMatchesFiniteDifferences) {
  // Both sides of 0 and of 6, none within a step of either kink.
  std::vector<float> x = away_from_zero(30, 2, 0.05f, 2.0f);
  for (std::size_t i = 0; i < x.size(); i += 3) x[i] += 6.0f;
  check_activation(relu6_forward, backward_through_mask<relu6_mask>, true, x);
}

// The masked backward against the select on the full output it replaces (the kernel before
// masks: out > 0 ? dy : 0, and (out > 0) & (out < 6) ? dy : 0), bit for bit, on values
// that test the edges: signed zeros, the kinks, denormals, infinities and NaN in y and in dy,
// and lengths that end mid-byte.
TEST(KernelActivation, MaskedBackwardEqualsTheFullOutputsSelectBitForBit) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN(),
              tiny = std::numeric_limits<float>::denorm_min();
  const std::vector<float> edges{0.0f, -0.0f, tiny, -tiny, 6.0f, std::nextafter(6.0f, 0.0f), std::nextafter(6.0f, 7.0f),
                                 1.0f, -1.0f, inf, -inf, nan, -nan, 5.5f, 1e-30f, -1e30f};
  for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9}, std::size_t{1000}}) {
    std::vector<float> x = random_values(n, 11, -8.0f, 8.0f), dy = random_values(n, 12);
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 3 == 0) x[i] = edges[i % edges.size()];
      if (i % 5 == 0) dy[i] = edges[(i / 5) % edges.size()];
    }
    std::vector<float> y(n), dx(n), expected(n);
    relu_forward(x, y);
    backward_through_mask<relu_mask>(dy, y, dx);
    for (std::size_t i = 0; i < n; ++i) expected[i] = y[i] > 0.0f ? dy[i] : 0.0f;
    EXPECT_EQ(0, std::memcmp(dx.data(), expected.data(), n * sizeof(float))) << "relu, " << n << " elements";
    relu6_forward(x, y);
    backward_through_mask<relu6_mask>(dy, y, dx);
    for (std::size_t i = 0; i < n; ++i) expected[i] = (y[i] > 0.0f && y[i] < 6.0f) ? dy[i] : 0.0f;
    EXPECT_EQ(0, std::memcmp(dx.data(), expected.data(), n * sizeof(float))) << "relu6, " << n << " elements";
  }
}

TEST(KernelActivation, MaskIsOneBitPerElementWorkedByHand) {
  // 10 elements: 2 bytes, the second holding elements 8 and 9 in its low bits.
  const std::vector<float> y{1, 0, 2, 0, 0, 0, 0, 3, 0, 6};
  std::vector<std::uint8_t> mask(2);
  relu_mask(y, mask);
  EXPECT_EQ(mask, (std::vector<std::uint8_t>{0b1000'0101, 0b10}));
  relu6_mask(y, mask);
  EXPECT_EQ(mask, (std::vector<std::uint8_t>{0b1000'0101, 0b00}));
  std::vector<std::uint8_t> short_mask(1);
  EXPECT_THROW(relu_mask(y, short_mask), InternalError);
}

TEST(KernelActivation, GeluGradientMatchesFiniteDifferences) {
  check_activation(gelu_forward, gelu_backward, false, random_values(30, 3, -4.0f, 4.0f));
}

TEST(KernelActivation, TanhGradientMatchesFiniteDifferences) {
  check_activation(tanh_forward, tanh_backward, true, random_values(30, 4, -3.0f, 3.0f));
}

TEST(KernelActivation, SigmoidGradientMatchesFiniteDifferences) {
  check_activation(sigmoid_forward, sigmoid_backward, true, random_values(30, 5, -6.0f, 6.0f));
}

// The tanh of the GELU and of Tanh (tanh_vectorizable.h) against double precision, over
// every 997th float from -12 to 12 (the tails are +-1 in float), through the kernel as the
// training step calls it: within 2 ulp; NaN stays NaN, infinities give +-1.
TEST(KernelActivation, TanhIsWithinTwoUlpOfTheCorrectlyRoundedValue) {
  std::vector<float> x;
  for (std::uint32_t bits = 0; bits < 0x41400000u; bits += 997) {  // 0x41400000: 12.0f
    float v;
    std::memcpy(&v, &bits, sizeof v);
    x.push_back(v);
    x.push_back(-v);
  }
  std::vector<float> y(x.size());
  tanh_forward(x, y);
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double exact = std::tanh(static_cast<double>(x[i]));
    const float rounded = static_cast<float>(exact);
    const double ulp = std::nextafter(std::fabs(rounded), std::numeric_limits<float>::infinity()) - std::fabs(rounded);
    worst = std::max(worst, std::fabs(y[i] - exact) / ulp);
  }
  EXPECT_LE(worst, 2.0);
  const std::vector<float> special{std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                   -std::numeric_limits<float>::infinity(), 0.0f, -0.0f};
  std::vector<float> out(special.size());
  tanh_forward(special, out);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(out[2], -1.0f);
  EXPECT_EQ(out[3], 0.0f);
  EXPECT_TRUE(std::signbit(out[4]));
}

TEST(KernelActivation, ForwardValuesWorkedByHand) {
  const std::vector<float> x{-2.0f, 0.0f, 1.0f, 7.0f};
  std::vector<float> y(4);
  relu_forward(x, y);
  EXPECT_EQ(y, (std::vector<float>{0, 0, 1, 7}));
  relu6_forward(x, y);
  EXPECT_EQ(y, (std::vector<float>{0, 0, 1, 6}));
  gelu_forward(x, y);  // tanh approximation: gelu(1) = 0.5 (1 + tanh(0.79788 x 1.044715))
  EXPECT_NEAR(y[1], 0.0f, 1e-7);
  EXPECT_NEAR(y[2], 0.841192f, 1e-5);
  EXPECT_NEAR(y[0], -0.045402f, 1e-5);
  sigmoid_forward(std::vector<float>{0.0f, -100.0f, 100.0f, -1.0f}, y);
  EXPECT_EQ(y[0], 0.5f);
  EXPECT_GE(y[1], 0.0f);
  EXPECT_LT(y[1], 1e-30f);  // tiny, not NaN
  EXPECT_EQ(y[2], 1.0f);
  EXPECT_NEAR(y[3], 1.0f / (1.0f + std::exp(1.0f)), 1e-7);
}

TEST(KernelActivation, InPlaceGivesTheSameResult) {
  const std::vector<float> x = random_values(17, 6, -3.0f, 3.0f);
  std::vector<float> out(17), in_place = x;
  gelu_forward(x, out);
  gelu_forward(in_place, in_place);
  EXPECT_EQ(in_place, out);
}

TEST(KernelAdd, SumsAndItsGradientFlowsToBoth) {
  const std::vector<float> a{1, 2, 3}, b{0.5f, -2, 4};
  std::vector<float> y(3);
  add_forward(a, b, y);
  EXPECT_EQ(y, (std::vector<float>{1.5f, 0, 7}));
  const std::vector<float> dy = random_values(3, 7);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { add_forward(in, b, out); }, a, 3, dy, dy));
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { add_forward(a, in, out); }, b, 3, dy, dy));
}

TEST(KernelFlatten, CopiesBothWays) {
  const std::vector<float> x = random_values(12, 8);
  std::vector<float> y(12), dx(12);
  flatten_forward(x, y);
  EXPECT_EQ(y, x);
  flatten_backward(y, dx);
  EXPECT_EQ(dx, x);
  flatten_forward(y, y);  // the same memory: nothing to do
  EXPECT_EQ(y, x);
}

}  // namespace
}  // namespace poet::kernels
