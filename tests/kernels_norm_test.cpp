// Batch norm (training mode), layer norm and group norm: statistics, normalization, gradients through
// the statistics, and the running statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_norm.h"

namespace poet::kernels {
namespace {

using testing::gradient_matches;
using testing::random_values;

template <class S>
using StatsKernel = void (*)(const S&, std::span<const float>, std::span<float>);
// (s, x or dy, ..., out): the forward's and the input gradient's signature, as kernels_norm.h.
template <class S>
using NormKernel = void (*)(const S&, std::span<const float>, std::span<const float>, std::span<const float>,
                            std::span<const float>, std::span<float>);
template <class S>
using ParamsKernel = void (*)(const S&, std::span<const float>, std::span<const float>, std::span<const float>,
                              std::span<float>, std::span<float>);

// A norm lowered into its statistics node and the norm: the gradients of x, gamma and beta
// (`params` each) against finite differences of that pair's forward, through the statistics.
template <class S>
void expect_gradients_match_finite_differences(const S& s, std::size_t size, std::size_t params,
                                               std::size_t stats_size, StatsKernel<S> statistics,
                                               NormKernel<S> forward, NormKernel<S> backward_input,
                                               ParamsKernel<S> backward_params) {
  const std::vector<float> x = random_values(size, 1, -2.0f, 2.0f), gamma = random_values(params, 2, 0.5f, 1.5f),
                           beta = random_values(params, 3), dy = random_values(size, 4);
  std::vector<float> stats(stats_size), dx(size), dgamma(params), dbeta(params);
  statistics(s, x, stats);
  backward_input(s, dy, x, stats, gamma, dx);
  backward_params(s, dy, x, stats, dgamma, dbeta);
  const auto stats_then_norm = [&](std::span<const float> in, std::span<const float> g, std::span<const float> b,
                                   std::span<float> out) {
    std::vector<float> st(stats_size);
    statistics(s, in, st);
    forward(s, in, st, g, b, out);
  };
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { stats_then_norm(in, gamma, beta, out); }, x, size, dy, dx,
                               1e-3f));
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { stats_then_norm(x, in, beta, out); }, gamma, size, dy,
                               dgamma));
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { stats_then_norm(x, gamma, in, out); }, beta, size, dy,
                               dbeta));
}

// Channel 0 holds {1, 3} across a batch of two: mean 2, biased variance 1.
TEST(KernelBatchNorm, StatisticsAndForwardWorkedByHand) {
  const BatchNormShape s{.batch = 2, .channels = 2, .spatial = 1, .eps = 1e-5f};
  const std::vector<float> x{1, 10, 3, 10};  // [n][c]: channel 1 is constant
  std::vector<float> stats(4), y(4);
  batch_norm_stats(s, x, stats);
  EXPECT_FLOAT_EQ(stats[0], 2.0f);
  EXPECT_FLOAT_EQ(stats[1], 1.0f / std::sqrt(1.0f + 1e-5f));
  EXPECT_FLOAT_EQ(stats[2], 10.0f);
  EXPECT_FLOAT_EQ(stats[3], 1.0f / std::sqrt(1e-5f));
  batch_norm_forward(s, x, stats, std::vector<float>{2, 1}, std::vector<float>{0.5f, -1}, y);
  EXPECT_NEAR(y[0], -2.0f + 0.5f, 1e-4);
  EXPECT_NEAR(y[2], 2.0f + 0.5f, 1e-4);
  EXPECT_FLOAT_EQ(y[1], -1.0f);
  EXPECT_FLOAT_EQ(y[3], -1.0f);
}

// The statistics sum a channel in float blocks added in double, the mean first and then the
// squared deviations from it: a channel far from zero, whose planes end in a partial block
// and whose first element is far from the rest, gets the mean and the variance of sums in
// double (one pass of squares, E[x^2] - mean^2, would lose the variance here).
TEST(KernelBatchNorm, StatisticsStayAccurateOverManyBlocksFarFromZero) {
  const BatchNormShape s{.batch = 3, .channels = 2, .spatial = 700, .eps = 1e-6f};
  std::vector<float> x = random_values(static_cast<std::size_t>(3 * 2 * 700), 7, -1.0f, 1.0f);
  for (float& v : x) v += 1000.0f;
  x[0] = 1500.0f;
  std::vector<float> stats(4);
  batch_norm_stats(s, x, stats);
  for (std::int64_t c = 0; c < 2; ++c) {
    std::vector<double> channel;
    for (std::int64_t n = 0; n < 3; ++n)
      for (std::int64_t i = 0; i < 700; ++i) channel.push_back(x[static_cast<std::size_t>((n * 2 + c) * 700 + i)]);
    double sum = 0, squares = 0;
    for (const double v : channel) sum += v;
    const double mean = sum / 2100;
    for (const double v : channel) squares += (v - mean) * (v - mean);
    const double inv_std = 1.0 / std::sqrt(squares / 2100 + 1e-6);
    EXPECT_NEAR(stats[static_cast<std::size_t>(2 * c)], mean, 1e-7 * mean) << "channel " << c;
    EXPECT_NEAR(stats[static_cast<std::size_t>(2 * c + 1)], inv_std, 1e-5 * inv_std) << "channel " << c;
  }
}

TEST(KernelBatchNorm, GradientsMatchFiniteDifferencesThroughTheStatistics) {
  expect_gradients_match_finite_differences<BatchNormShape>({.batch = 3, .channels = 2, .spatial = 4, .eps = 1e-5f},
                                                            24, 2, 4, batch_norm_stats, batch_norm_forward,
                                                            batch_norm_backward_input, batch_norm_backward_params);
}

TEST(KernelBatchNorm, RunningStatisticsUpdateWithMomentumAndUnbiasedVariance) {
  const BatchNormShape s{.batch = 2, .channels = 1, .spatial = 1, .eps = 1e-5f};
  const std::vector<float> x{1, 3};  // mean 2, biased variance 1, unbiased 2
  std::vector<float> stats(2), running_mean{0.0f}, running_var{1.0f};
  batch_norm_stats(s, x, stats);
  batch_norm_update_running_stats(s, stats, 0.1f, running_mean, running_var);
  EXPECT_NEAR(running_mean[0], 0.9f * 0.0f + 0.1f * 2.0f, 1e-6);
  EXPECT_NEAR(running_var[0], 0.9f * 1.0f + 0.1f * 2.0f, 1e-5);
  // A second step moves them again, from where they are.
  batch_norm_update_running_stats(s, stats, 0.1f, running_mean, running_var);
  EXPECT_NEAR(running_mean[0], 0.9f * 0.2f + 0.1f * 2.0f, 1e-6);
  EXPECT_NEAR(running_var[0], 0.9f * 1.1f + 0.1f * 2.0f, 1e-5);
}

TEST(KernelBatchNorm, InferenceStatisticsNormalizeWithTheRunningOnes) {
  const BatchNormShape s{.batch = 1, .channels = 1, .spatial = 2, .eps = 0.25f};
  std::vector<float> stats(2), y(2);
  batch_norm_inference_stats(s, std::vector<float>{1.0f}, std::vector<float>{3.75f}, stats);
  batch_norm_forward(s, std::vector<float>{3.0f, 1.0f}, stats, std::vector<float>{1.0f}, std::vector<float>{0.0f}, y);
  EXPECT_FLOAT_EQ(y[0], 1.0f);  // (3 - 1) / sqrt(3.75 + 0.25)
  EXPECT_FLOAT_EQ(y[1], 0.0f);
}

TEST(KernelLayerNorm, StatisticsAndForwardWorkedByHand) {
  const LayerNormShape s{.rows = 2, .features = 4, .eps = 1e-5f};
  const std::vector<float> x{1, 2, 3, 4, -1, -1, -1, -1};
  std::vector<float> stats(4), y(8);
  layer_norm_stats(s, x, stats);
  EXPECT_FLOAT_EQ(stats[0], 2.5f);
  EXPECT_FLOAT_EQ(stats[1], 1.0f / std::sqrt(1.25f + 1e-5f));
  EXPECT_FLOAT_EQ(stats[2], -1.0f);
  layer_norm_forward(s, x, stats, std::vector<float>(4, 1.0f), std::vector<float>(4, 0.0f), y);
  EXPECT_NEAR(y[0], -1.5f / std::sqrt(1.25f), 1e-4);
  EXPECT_NEAR(y[3], 1.5f / std::sqrt(1.25f), 1e-4);
  EXPECT_FLOAT_EQ(y[5], 0.0f);
}

TEST(KernelLayerNorm, GradientsMatchFiniteDifferencesThroughTheStatistics) {
  expect_gradients_match_finite_differences<LayerNormShape>({.rows = 3, .features = 5, .eps = 1e-5f}, 15, 5, 6,
                                                            layer_norm_stats, layer_norm_forward,
                                                            layer_norm_backward_input, layer_norm_backward_params);
}

// Sample 0's group 1 is channels 2 and 3, {5, 6} and {7, 8}: mean 6.5, biased variance 1.25.
TEST(KernelGroupNorm, StatisticsPerSampleAndGroupOfChannels) {
  const GroupNormShape s{.batch = 2, .channels = 4, .spatial = 2, .groups = 2, .eps = 1e-5f};
  std::vector<float> x(16);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
  std::vector<float> stats(8), y(16);
  group_norm_stats(s, x, stats);
  EXPECT_FLOAT_EQ(stats[2], 6.5f);
  EXPECT_FLOAT_EQ(stats[3], 1.0f / std::sqrt(1.25f + 1e-5f));
  EXPECT_FLOAT_EQ(stats[6], 14.5f);  // sample 1, group 1
  // gamma and beta per channel: channel 3 scales by 2 and shifts by 1.
  group_norm_forward(s, x, stats, std::vector<float>{1, 1, 1, 2}, std::vector<float>{0, 0, 0, 1}, y);
  EXPECT_NEAR(y[7], 2 * 1.5f / std::sqrt(1.25f) + 1, 1e-4);
  EXPECT_NEAR(y[4], -1.5f / std::sqrt(1.25f), 1e-4);
}

// Three groups of two channels: gamma and beta per channel, the statistics per group.
TEST(KernelGroupNorm, GradientsMatchFiniteDifferencesThroughTheStatistics) {
  expect_gradients_match_finite_differences<GroupNormShape>(
      {.batch = 2, .channels = 6, .spatial = 3, .groups = 3, .eps = 1e-5f}, 36, 6, 12, group_norm_stats,
      group_norm_forward, group_norm_backward_input, group_norm_backward_params);
}

}  // namespace
}  // namespace poet::kernels
