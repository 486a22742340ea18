// The parameter updates against values worked out by hand, and against the formula taken
// one element at a time in a plain loop.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_optimizer.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

using testing::bit_identical;
using testing::random_values;

TEST(KernelOptimizer, SgdAndMomentumTakeTheStepsWorkedOutByHand) {
  std::vector<float> p{1.0f, -2.0f}, v{0.0f, 0.0f};
  const std::vector<float> g{2.0f, -4.0f};
  sgd_update(0.25f, g, p);
  EXPECT_EQ(p, (std::vector<float>{0.5f, -1.0f}));
  // v = g, then 0.5 g + g = 1.5 g; p moves by 0.25 v each time.
  momentum_update(0.25f, 0.5f, g, v, p);
  momentum_update(0.25f, 0.5f, g, v, p);
  EXPECT_EQ(v, (std::vector<float>{3.0f, -6.0f}));
  EXPECT_EQ(p, (std::vector<float>{0.5f - 0.5f - 0.75f, -1.0f + 1.0f + 1.5f}));
}

TEST(KernelOptimizer, AdamsFirstStepMovesEachParameterByTheRateAgainstItsGradientsSign) {
  // After one step the bias-corrected moments are g and g^2: the step is lr g / (|g| + eps).
  const float beta1 = 0.9f, beta2 = 0.999f;
  const AdamStep a{.learning_rate = 0.01f, .beta1 = beta1, .beta2 = beta2, .epsilon = 1e-8f,
                   .correction1 = 1.0f - beta1, .correction2 = 1.0f - beta2};
  std::vector<float> p{1.0f, 1.0f, 1.0f}, m(3), v(3);
  adam_update(a, std::vector<float>{3.0f, -0.5f, 0.0f}, m, v, p);
  EXPECT_NEAR(p[0], 0.99f, 1e-6f);
  EXPECT_NEAR(p[1], 1.01f, 1e-6f);
  EXPECT_EQ(p[2], 1.0f);  // no gradient, no step
}

// Larger than a block and than the size at which the threads start, and not a multiple of
// either: the vectorized, threaded loops must give the plain loop's bits.
TEST(KernelOptimizer, TheUpdatesGiveThePlainLoopsBits) {
  const std::size_t n = 300001;
  const std::vector<float> g = random_values(n, 1), p0 = random_values(n, 2), m0 = random_values(n, 3);
  std::vector<float> v0 = random_values(n, 4);
  for (float& x : v0) x = std::abs(x);  // Adam's second moment is never negative
  const float lr = 0.01f, mu = 0.9f;
  const AdamStep a{.learning_rate = lr, .beta1 = 0.9f, .beta2 = 0.999f, .epsilon = 1e-8f,
                   .correction1 = 0.19f, .correction2 = 0.002f};

  // The formulas, one element at a time.
  std::vector<float> sgd_p = p0, momentum_p = p0, momentum_v = m0, adam_p = p0, adam_m = m0, adam_v = v0;
  for (std::size_t i = 0; i < n; ++i) {
    sgd_p[i] -= lr * g[i];
    momentum_v[i] = mu * momentum_v[i] + g[i];
    momentum_p[i] -= lr * momentum_v[i];
    adam_m[i] = a.beta1 * adam_m[i] + (1.0f - a.beta1) * g[i];
    adam_v[i] = a.beta2 * adam_v[i] + (1.0f - a.beta2) * g[i] * g[i];
    adam_p[i] -= lr * (adam_m[i] / a.correction1) / (std::sqrt(adam_v[i] / a.correction2) + a.epsilon);
  }
  {
    std::vector<float> p = p0;
    sgd_update(lr, g, p);
    EXPECT_TRUE(bit_identical(p, sgd_p));
  }
  {
    std::vector<float> p = p0, v = m0;
    momentum_update(lr, mu, g, v, p);
    EXPECT_TRUE(bit_identical(v, momentum_v));
    EXPECT_TRUE(bit_identical(p, momentum_p));
  }
  {
    std::vector<float> p = p0, m = m0, v = v0;
    adam_update(a, g, m, v, p);
    EXPECT_TRUE(bit_identical(m, adam_m));
    EXPECT_TRUE(bit_identical(v, adam_v));
    EXPECT_TRUE(bit_identical(p, adam_p));
  }
}

TEST(KernelOptimizer, StateOfAnotherSizeIsABug) {
  std::vector<float> p(4), v(3);
  const std::vector<float> g(4);
  EXPECT_THROW(momentum_update(0.1f, 0.9f, g, v, p), InternalError);
}

}  // namespace
}  // namespace poet::kernels
