// Element-wise activations, add and flatten.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_activation.h"

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

TEST(KernelActivation, ReluGradientMatchesFiniteDifferences) {
  check_activation(relu_forward, relu_backward, true, away_from_zero(30, 1, 0.05f, 2.0f));
}

TEST(KernelActivation, Relu6GradientMatchesFiniteDifferences) {
  // Both sides of 0 and of 6, none within a step of either kink.
  std::vector<float> x = away_from_zero(30, 2, 0.05f, 2.0f);
  for (std::size_t i = 0; i < x.size(); i += 3) x[i] += 6.0f;
  check_activation(relu6_forward, relu6_backward, true, x);
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
