// Batched matmul, softmax and the head permutations.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_attention.h"

namespace poet::kernels {
namespace {

using testing::gradient_matches;
using testing::random_values;

TEST(KernelMatMul, ForwardWorkedByHand) {
  const std::vector<float> a{1, 2, 3, 4}, b{5, 6, 7, 8};
  std::vector<float> c(4);
  matmul_forward({.batch = 1, .m = 2, .k = 2, .n = 2, .transpose_b = false, .alpha = 1.0f}, a, b, c);
  EXPECT_EQ(c, (std::vector<float>{19, 22, 43, 50}));
  matmul_forward({.batch = 1, .m = 2, .k = 2, .n = 2, .transpose_b = true, .alpha = 0.5f}, a, b, c);
  EXPECT_EQ(c, (std::vector<float>{8.5f, 11.5f, 19.5f, 26.5f}));
}

void check_matmul_gradients(const MatMulShape& s) {
  const std::size_t a_size = s.batch * s.m * s.k, b_size = s.batch * s.k * s.n, c_size = s.batch * s.m * s.n;
  const std::vector<float> a = random_values(a_size, 1), b = random_values(b_size, 2), dc = random_values(c_size, 3);
  std::vector<float> da(a_size), db(b_size);
  matmul_backward_a(s, dc, b, da);
  matmul_backward_b(s, dc, a, db);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { matmul_forward(s, in, b, out); }, a, c_size, dc, da));
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { matmul_forward(s, a, in, out); }, b, c_size, dc, db));
}

TEST(KernelMatMul, GradientsMatchFiniteDifferences) {
  check_matmul_gradients({.batch = 2, .m = 3, .k = 4, .n = 5, .transpose_b = false, .alpha = 1.0f});
}

TEST(KernelMatMul, GradientsMatchFiniteDifferencesTransposedScaled) {
  check_matmul_gradients({.batch = 3, .m = 4, .k = 2, .n = 3, .transpose_b = true, .alpha = 0.125f});
}

TEST(KernelSoftmax, EqualLogitsGiveEqualProbabilities) {
  std::vector<float> y(6);
  softmax_forward({.rows = 2, .cols = 3}, std::vector<float>{2, 2, 2, -500, -500, -500}, y);
  for (float p : y) EXPECT_FLOAT_EQ(p, 1.0f / 3.0f);
}

TEST(KernelSoftmax, LargeLogitsDoNotOverflow) {
  std::vector<float> y(2);
  // 1000 and 1001 are exact in fp32, and exp(1000) would overflow.
  softmax_forward({.rows = 1, .cols = 2}, std::vector<float>{1000, 1001}, y);
  EXPECT_NEAR(y[0], 1.0 / (1.0 + std::exp(1.0)), 1e-7);
  EXPECT_NEAR(y[1], std::exp(1.0) / (1.0 + std::exp(1.0)), 1e-7);
}

TEST(KernelSoftmax, GradientMatchesFiniteDifferences) {
  const RowsShape s{.rows = 3, .cols = 5};
  const std::vector<float> x = random_values(15, 1, -2.0f, 2.0f), dy = random_values(15, 2);
  std::vector<float> y(15), dx(15);
  softmax_forward(s, x, y);
  softmax_backward(s, dy, y, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { softmax_forward(s, in, out); }, x, 15, dy, dx, 1e-3f));
}

// x[b, t, h * D + d] lands at y[b, h, t, d].
TEST(KernelHeads, SplitPermutesAndMergeUndoesIt) {
  const HeadsShape s{.batch = 2, .seq = 3, .heads = 2, .head_dim = 2};
  std::vector<float> x(24);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  std::vector<float> y(24), back(24);
  split_heads(s, x, y);
  // b = 1, t = 2, h = 1, d = 0: x index ((1 x 3 + 2) x 2 + 1) x 2 = 22, y index ((1 x 2 + 1) x 3 + 2) x 2 = 22;
  // b = 0, t = 1, h = 0, d = 1: x index 5, y index 3.
  EXPECT_EQ(y[22], 22.0f);
  EXPECT_EQ(y[3], 5.0f);
  EXPECT_EQ(y[6], 2.0f);  // b 0, h 1, t 0, d 0 <- x[0, 0, 2]
  merge_heads(s, y, back);
  EXPECT_EQ(back, x);
}

TEST(KernelHeads, GradientsMatchFiniteDifferences) {
  const HeadsShape s{.batch = 2, .seq = 3, .heads = 3, .head_dim = 2};
  const std::vector<float> x = random_values(36, 1), dy = random_values(36, 2);
  std::vector<float> dx(36);
  split_heads_backward(s, dy, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { split_heads(s, in, out); }, x, 36, dy, dx));
  merge_heads_backward(s, dy, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { merge_heads(s, in, out); }, x, 36, dy, dx));
}

}  // namespace
}  // namespace poet::kernels
