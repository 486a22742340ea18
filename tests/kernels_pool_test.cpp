// Max, average and global average pooling.
#include <gtest/gtest.h>

#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_pool.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

using testing::distinct_values;
using testing::gradient_matches;
using testing::random_values;

std::size_t out_size(const Pool2dShape& s) { return s.batch * s.channels * s.out_h() * s.out_w(); }
std::size_t in_size(const Pool2dShape& s) { return s.batch * s.channels * s.in_h * s.in_w; }

// Two 2x2 windows over
//   1 3 | 3 0
//   3 2 | 1 3
// Each holds the maximum 3 twice; the first in row-major order takes the gradient.
TEST(KernelMaxPool2d, TwoByTwoWithTiesWorkedByHand) {
  const Pool2dShape s{.batch = 1, .channels = 1, .in_h = 2, .in_w = 4, .kernel_h = 2, .kernel_w = 2, .stride = 2};
  const std::vector<float> x{1, 3, 3, 0, 3, 2, 1, 3};
  std::vector<float> y(2), dx(8);
  max_pool2d_forward(s, x, y);
  EXPECT_EQ(y, (std::vector<float>{3, 3}));
  max_pool2d_backward(s, std::vector<float>{10, 20}, x, dx);
  EXPECT_EQ(dx, (std::vector<float>{0, 10, 20, 0, 0, 0, 0, 0}));
}

TEST(KernelMaxPool2d, GradientMatchesFiniteDifferencesOverlappingPadded) {
  const Pool2dShape s{.batch = 2, .channels = 2, .in_h = 4, .in_w = 5, .kernel_h = 3, .kernel_w = 3, .stride = 1,
                      .pad_h = 1, .pad_w = 1};
  const std::vector<float> x = distinct_values(in_size(s), 1), dy = random_values(out_size(s), 2);
  std::vector<float> dx(in_size(s));
  max_pool2d_backward(s, dy, x, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { max_pool2d_forward(s, in, out); }, x, out_size(s), dy, dx));
}

TEST(KernelMaxPool2d, PaddingAsWideAsTheKernelIsRejected) {
  EXPECT_THROW(validate(Pool2dShape{.batch = 1, .channels = 1, .in_h = 4, .in_w = 4, .kernel_h = 2, .kernel_w = 2,
                                    .stride = 2, .pad_h = 2, .pad_w = 0}),
               InputError);
}

TEST(KernelAvgPool2d, ForwardWorkedByHand) {
  const Pool2dShape s{.batch = 1, .channels = 1, .in_h = 2, .in_w = 4, .kernel_h = 2, .kernel_w = 2, .stride = 2};
  std::vector<float> y(2);
  avg_pool2d_forward(s, std::vector<float>{1, 3, 3, 0, 3, 2, 1, 4}, y);
  EXPECT_EQ(y, (std::vector<float>{2.25f, 2.0f}));
}

TEST(KernelAvgPool2d, GradientMatchesFiniteDifferences) {
  const Pool2dShape s{.batch = 2, .channels = 3, .in_h = 5, .in_w = 4, .kernel_h = 3, .kernel_w = 2, .stride = 2,
                      .pad_h = 1, .pad_w = 1};
  const std::vector<float> x = random_values(in_size(s), 1), dy = random_values(out_size(s), 2);
  std::vector<float> dx(in_size(s));
  avg_pool2d_backward(s, dy, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { avg_pool2d_forward(s, in, out); }, x, out_size(s), dy, dx));
}

TEST(KernelGlobalAvgPool, ForwardAndGradient) {
  std::vector<float> y(2);
  global_avg_pool_forward(1, 2, 4, std::vector<float>{1, 2, 3, 6, -1, -1, -1, -1}, y);
  EXPECT_EQ(y, (std::vector<float>{3, -1}));
  const std::vector<float> x = random_values(2 * 3 * 6, 1), dy = random_values(6, 2);
  std::vector<float> dx(x.size());
  global_avg_pool_backward(2, 3, 6, dy, dx);
  EXPECT_TRUE(
      gradient_matches([&](auto in, auto out) { global_avg_pool_forward(2, 3, 6, in, out); }, x, 6, dy, dx));
}

}  // namespace
}  // namespace poet::kernels
