// Softmax cross-entropy, averaged over the rows; an autoencoder's mean squared error.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_loss.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

using testing::random_values;

TEST(KernelSoftmaxCrossEntropy, EqualLogitsCostLogOfTheClassCount) {
  const RowsShape s{.rows = 2, .cols = 4};
  const std::vector<std::int32_t> labels{0, 3};
  std::vector<float> probabilities(8);
  const float loss = softmax_cross_entropy_forward(s, std::vector<float>(8, 1.5f), labels, probabilities);
  EXPECT_FLOAT_EQ(loss, std::log(4.0f));
  for (float p : probabilities) EXPECT_FLOAT_EQ(p, 0.25f);
  std::vector<float> dlogits(8);
  softmax_cross_entropy_backward(s, probabilities, labels, dlogits);
  // (p - one_hot) / rows
  EXPECT_FLOAT_EQ(dlogits[0], -0.375f);
  EXPECT_FLOAT_EQ(dlogits[1], 0.125f);
  EXPECT_FLOAT_EQ(dlogits[7], -0.375f);
}

TEST(KernelSoftmaxCrossEntropy, ConfidentlyWrongRowHasAFiniteLoss) {
  std::vector<float> probabilities(2);
  const float loss = softmax_cross_entropy_forward({.rows = 1, .cols = 2}, std::vector<float>{200, -200},
                                                   std::vector<std::int32_t>{1}, probabilities);
  EXPECT_FLOAT_EQ(loss, 400.0f);
}

TEST(KernelSoftmaxCrossEntropy, GradientMatchesFiniteDifferencesOfTheMeanLoss) {
  const RowsShape s{.rows = 4, .cols = 3};
  const std::vector<std::int32_t> labels{2, 0, 1, 2};
  std::vector<float> logits = random_values(12, 1, -2.0f, 2.0f), probabilities(12), dlogits(12);
  softmax_cross_entropy_forward(s, logits, labels, probabilities);
  softmax_cross_entropy_backward(s, probabilities, labels, dlogits);
  const float h = 1e-2f;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const float original = logits[i];
    logits[i] = original + h;
    const double plus = softmax_cross_entropy_forward(s, logits, labels, probabilities);
    logits[i] = original - h;
    const double minus = softmax_cross_entropy_forward(s, logits, labels, probabilities);
    logits[i] = original;
    const double numeric = (plus - minus) / (static_cast<double>(original + h) - static_cast<double>(original - h));
    EXPECT_NEAR(dlogits[i], numeric, 1e-3 + 1e-2 * std::abs(numeric)) << "logit " << i;
  }
}

TEST(KernelSoftmaxCrossEntropy, LabelOutsideTheClassesIsAnInputError) {
  std::vector<float> probabilities(3);
  EXPECT_THROW(softmax_cross_entropy_forward({.rows = 1, .cols = 3}, std::vector<float>(3, 0.0f),
                                             std::vector<std::int32_t>{3}, probabilities),
               InputError);
}

TEST(KernelMeanSquaredError, LossIsTheMeanSquareAndItsGradientMatchesFiniteDifferences) {
  const std::vector<float> target{1.0f, -2.0f, 0.5f, 3.0f};
  std::vector<float> x{2.0f, -2.0f, 0.0f, 1.0f}, difference(4), dx(4);
  EXPECT_FLOAT_EQ(mean_squared_error_forward(x, target, difference), (1.0f + 0.0f + 0.25f + 4.0f) / 4);
  EXPECT_EQ(difference, (std::vector<float>{1.0f, 0.0f, -0.5f, -2.0f}));
  mean_squared_error_backward(difference, dx);
  const float h = 1e-2f;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float original = x[i];
    x[i] = original + h;
    const double plus = mean_squared_error_forward(x, target, difference);
    x[i] = original - h;
    const double minus = mean_squared_error_forward(x, target, difference);
    x[i] = original;
    EXPECT_NEAR(dx[i], (plus - minus) / (2 * h), 1e-3) << "value " << i;
  }
  EXPECT_THROW(mean_squared_error_forward(x, std::vector<float>(3), difference), InternalError);
}

}  // namespace
}  // namespace poet::kernels
