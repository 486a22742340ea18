// Convolution: worked examples and gradients for plain, grouped, depthwise and 1x1 shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../src/kernels/conv_channels_last.h"
#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_conv.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

using testing::bit_identical;
using testing::gradient_matches;
using testing::random_values;

std::vector<float> conv(const Conv2dShape& s, const std::vector<float>& x, const std::vector<float>& weight,
                        const std::vector<float>& bias) {
  std::vector<float> y(s.batch * s.out_channels * s.out_h() * s.out_w());
  std::vector<float> scratch(conv2d_scratch_elements(s));
  conv2d_forward(s, x, weight, bias, y, scratch);
  return y;
}

// 1..9 in a 3x3 image, a 3x3 kernel of ones: each output sums the window's pixels.
TEST(KernelConv2d, ThreeByThreeWorkedByHand) {
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9}, ones(9, 1.0f);
  Conv2dShape s{.batch = 1, .in_channels = 1, .in_h = 3, .in_w = 3, .out_channels = 1, .kernel_h = 3,
                .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 0, .pad_w = 0, .groups = 1, .bias = true};
  EXPECT_EQ(conv(s, x, ones, {0.5f}), (std::vector<float>{45.5f}));

  s.pad_h = s.pad_w = 1;
  s.bias = false;
  EXPECT_EQ(conv(s, x, ones, {}), (std::vector<float>{12, 21, 16, 27, 45, 33, 24, 39, 28}));

  s.stride_h = s.stride_w = 2;  // the four corners of the padded result
  EXPECT_EQ(conv(s, x, ones, {}), (std::vector<float>{12, 16, 24, 28}));
}

// Kernel taps are not symmetric: a kernel with a single 1 at (0, 2) shifts the image.
TEST(KernelConv2d, KernelOrientationIsCrossCorrelation) {
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> weight(9, 0.0f);
  weight[2] = 1.0f;  // row 0, column 2: output (y, x) reads input (y - 1, x + 1)
  const Conv2dShape s{.batch = 1, .in_channels = 1, .in_h = 3, .in_w = 3, .out_channels = 1, .kernel_h = 3,
                      .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false};
  EXPECT_EQ(conv(s, x, weight, {}), (std::vector<float>{0, 0, 0, 2, 3, 0, 5, 6, 0}));
}

// The convolution by its definition, one output at a time.
std::vector<float> direct_conv(const Conv2dShape& s, const std::vector<float>& x, const std::vector<float>& weight) {
  std::vector<float> y(s.batch * s.out_channels * s.out_h() * s.out_w(), 0.0f);
  const std::int64_t cin = s.in_channels_per_group(), cout = s.out_channels_per_group();
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t o = 0; o < s.out_channels; ++o)
      for (std::int64_t oy = 0; oy < s.out_h(); ++oy)
        for (std::int64_t ox = 0; ox < s.out_w(); ++ox) {
          double sum = 0;
          for (std::int64_t c = 0; c < cin; ++c)
            for (std::int64_t i = 0; i < s.kernel_h; ++i)
              for (std::int64_t j = 0; j < s.kernel_w; ++j) {
                const std::int64_t iy = oy * s.stride_h - s.pad_h + i * s.dilation,
                                   ix = ox * s.stride_w - s.pad_w + j * s.dilation;
                if (iy < 0 || iy >= s.in_h || ix < 0 || ix >= s.in_w) continue;
                const std::int64_t channel = o / cout * cin + c;
                sum += x[((n * s.in_channels + channel) * s.in_h + iy) * s.in_w + ix] *
                       weight[((o * cin + c) * s.kernel_h + i) * s.kernel_w + j];
              }
          y[((n * s.out_channels + o) * s.out_h() + oy) * s.out_w() + ox] = static_cast<float>(sum);
        }
  return y;
}

// Every stride (each axis its own, as a spectrogram's (2, 1)), padding and kernel size, on
// both paths (im2col and GEMM: one group; depthwise: a group per channel), against the
// definition.
TEST(KernelConv2d, MatchesTheDefinitionForEveryStrideAndPadding) {
  int checked = 0;
  for (int groups : {1, 2})
    for (int kernel = 1; kernel <= 4; ++kernel)
      for (int stride_h = 1; stride_h <= 3; ++stride_h)
        for (int stride_w = 1; stride_w <= 3; ++stride_w)
          for (int pad = 0; pad < kernel; ++pad) {
            const Conv2dShape s{.batch = 2, .in_channels = 2, .in_h = 7, .in_w = 6, .out_channels = 2,
                                .kernel_h = kernel, .kernel_w = kernel, .stride_h = stride_h, .stride_w = stride_w,
                                .pad_h = pad, .pad_w = pad, .groups = groups, .bias = false};
            const std::vector<float> x = random_values(2 * 2 * 7 * 6, 5),
                                     weight = random_values(2 * (2 / groups) * kernel * kernel, 6);
            const std::vector<float> got = conv(s, x, weight, {}), want = direct_conv(s, x, weight);
            ASSERT_EQ(got.size(), want.size());
            for (std::size_t k = 0; k < got.size(); ++k)
              ASSERT_NEAR(got[k], want[k], 1e-5f) << "groups " << groups << ", kernel " << kernel << ", stride "
                                                  << stride_h << "x" << stride_w << ", pad " << pad << ", output " << k;
            ++checked;
          }
  EXPECT_EQ(checked, 180);
}

// resnet18-sized 3x3 convolutions go by Winograd's F(2x2, 3x3) (src/kernels/conv_winograd.h):
// the forward and both gradients against their definitions in double. Odd sizes (the
// last tiles half outside), blocks of tile rows that span two images, more output than
// input channels (the input gradient's shape swaps them), a bias, and scratch that starts
// as NaN, which no product may read.
TEST(KernelConv2d, WinogradMatchesTheDefinition) {
  const Conv2dShape s{.batch = 3, .in_channels = 32, .in_h = 29, .in_w = 27, .out_channels = 64, .kernel_h = 3,
                      .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true};
  const std::int64_t plane = s.in_h * s.in_w;
  const std::vector<float> x = random_values(s.batch * s.in_channels * plane, 11),
                           weight = random_values(s.out_channels * s.in_channels * 9, 12),
                           bias = random_values(s.out_channels, 13),
                           dy = random_values(s.batch * s.out_channels * plane, 14);
  std::vector<float> scratch(conv2d_scratch_elements(s), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> y(dy.size()), dx(x.size()), dweight(weight.size()), dbias(bias.size());
  conv2d_forward(s, x, weight, bias, y, scratch);
  conv2d_backward_input(s, dy, weight, dx, scratch);
  conv2d_backward_params(s, dy, x, dweight, dbias, scratch);
  const auto at = [&](std::int64_t n, std::int64_t c, std::int64_t channels, std::int64_t iy, std::int64_t ix) {
    return ((n * channels + c) * s.in_h + iy) * s.in_w + ix;
  };
  double worst = 0;
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t oy = 0; oy < s.in_h; ++oy)
      for (std::int64_t ox = 0; ox < s.in_w; ++ox) {
        for (std::int64_t o = 0; o < s.out_channels; ++o) {  // y at (oy, ox)
          double want = bias[o];
          for (std::int64_t c = 0; c < s.in_channels; ++c)
            for (std::int64_t i = 0; i < 3; ++i)
              for (std::int64_t j = 0; j < 3; ++j) {
                const std::int64_t iy = oy - 1 + i, ix = ox - 1 + j;
                if (iy >= 0 && iy < s.in_h && ix >= 0 && ix < s.in_w)
                  want += static_cast<double>(x[at(n, c, s.in_channels, iy, ix)]) *
                          weight[(o * s.in_channels + c) * 9 + i * 3 + j];
              }
          worst = std::max(worst, std::abs(y[at(n, o, s.out_channels, oy, ox)] - want));
        }
        for (std::int64_t c = 0; c < s.in_channels; ++c) {  // dx at (oy, ox), read as an input position
          double want = 0;
          for (std::int64_t o = 0; o < s.out_channels; ++o)
            for (std::int64_t i = 0; i < 3; ++i)
              for (std::int64_t j = 0; j < 3; ++j) {
                const std::int64_t y_row = oy + 1 - i, y_col = ox + 1 - j;
                if (y_row >= 0 && y_row < s.in_h && y_col >= 0 && y_col < s.in_w)
                  want += static_cast<double>(dy[at(n, o, s.out_channels, y_row, y_col)]) *
                          weight[(o * s.in_channels + c) * 9 + i * 3 + j];
              }
          worst = std::max(worst, std::abs(dx[at(n, c, s.in_channels, oy, ox)] - want));
        }
      }
  // Sums of 288 and 576 products of magnitude up to 1: float rounding, not a wrong term
  // (one misplaced product moves an output by about 0.3 on average).
  EXPECT_LT(worst, 1e-4);

  double worst_weight = 0;  // sums of 2,349 products
  for (std::int64_t o = 0; o < s.out_channels; ++o)
    for (std::int64_t c = 0; c < s.in_channels; ++c)
      for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t j = 0; j < 3; ++j) {
          double want = 0;
          for (std::int64_t n = 0; n < s.batch; ++n)
            for (std::int64_t oy = 0; oy < s.in_h; ++oy)
              for (std::int64_t ox = 0; ox < s.in_w; ++ox) {
                const std::int64_t iy = oy - 1 + i, ix = ox - 1 + j;
                if (iy >= 0 && iy < s.in_h && ix >= 0 && ix < s.in_w)
                  want += static_cast<double>(dy[at(n, o, s.out_channels, oy, ox)]) *
                          x[at(n, c, s.in_channels, iy, ix)];
              }
          worst_weight = std::max(worst_weight, std::abs(dweight[(o * s.in_channels + c) * 9 + i * 3 + j] - want));
        }
  EXPECT_LT(worst_weight, 1e-3);
}

void check_conv_gradients(const Conv2dShape& s) {
  const std::size_t x_size = s.batch * s.in_channels * s.in_h * s.in_w;
  const std::size_t w_size = s.out_channels * s.in_channels_per_group() * s.kernel_h * s.kernel_w;
  const std::size_t y_size = s.batch * s.out_channels * s.out_h() * s.out_w();
  const std::vector<float> x = random_values(x_size, 1), weight = random_values(w_size, 2),
                           dy = random_values(y_size, 4);
  const std::vector<float> bias = s.bias ? random_values(s.out_channels, 3) : std::vector<float>{};
  std::vector<float> scratch(conv2d_scratch_elements(s)), dx(x_size), dweight(w_size), dbias(bias.size());
  conv2d_backward_input(s, dy, weight, dx, scratch);
  conv2d_backward_params(s, dy, x, dweight, dbias, scratch);

  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { conv2d_forward(s, in, weight, bias, out, scratch); }, x,
                               y_size, dy, dx));
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { conv2d_forward(s, x, in, bias, out, scratch); }, weight,
                               y_size, dy, dweight));
  if (s.bias) {
    EXPECT_TRUE(gradient_matches([&](auto in, auto out) { conv2d_forward(s, x, weight, in, out, scratch); }, bias,
                                 y_size, dy, dbias));
  }
}

TEST(KernelConv2d, GradientsMatchFiniteDifferencesStridedPaddedGrouped) {
  check_conv_gradients({.batch = 2, .in_channels = 4, .in_h = 5, .in_w = 6, .out_channels = 6, .kernel_h = 3,
                        .kernel_w = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 2,
                        .bias = true});
}

TEST(KernelConv2d, GradientsMatchFiniteDifferencesRectangularKernelNoBias) {
  check_conv_gradients({.batch = 1, .in_channels = 2, .in_h = 4, .in_w = 5, .out_channels = 3, .kernel_h = 2,
                        .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 0, .groups = 1,
                        .bias = false});
}

// Strides that differ between the axes (a spectrogram's frequency rows halved, its time
// columns kept, and the other way round): by im2col, by kernel rows (images on the threads:
// one phase of rows, strided columns) and depthwise.
TEST(KernelConv2d, GradientsMatchFiniteDifferencesWithAStridePerAxis) {
  check_conv_gradients({.batch = 1, .in_channels = 2, .in_h = 7, .in_w = 5, .out_channels = 3, .kernel_h = 3,
                        .kernel_w = 2, .stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 0, .groups = 1,
                        .bias = true});
  check_conv_gradients({.batch = 3, .in_channels = 3, .in_h = 5, .in_w = 9, .out_channels = 4, .kernel_h = 3,
                        .kernel_w = 3, .stride_h = 1, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 1,
                        .bias = false});
  check_conv_gradients({.batch = 3, .in_channels = 3, .in_h = 8, .in_w = 5, .out_channels = 4, .kernel_h = 3,
                        .kernel_w = 3, .stride_h = 3, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1,
                        .bias = true});
  check_conv_gradients({.batch = 2, .in_channels = 3, .in_h = 6, .in_w = 7, .out_channels = 3, .kernel_h = 3,
                        .kernel_w = 3, .stride_h = 1, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 3,
                        .bias = true});
}

// The paths src/kernels/kernels_conv.cpp chooses by shape: convolutions by kernel rows
// (im2row; below 16 input channels the weight gradient too, from 16 over im2col), the
// input gradient as the convolution of dy with flipped weights (stride 1, "same" padding,
// no more output than input channels), else by col2im (here also with padding 2 / 0), the
// weight gradient summed transposed in groups of images (16 to 63 output channels; 5
// images make uneven groups), and im2col's whole-row copies (as many output as input
// columns, here with fewer output rows).
TEST(KernelConv2d, GradientsMatchFiniteDifferencesOnEveryPath) {
  check_conv_gradients({.batch = 3, .in_channels = 16, .in_h = 5, .in_w = 4, .out_channels = 4, .kernel_h = 3,
                        .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1,
                        .bias = false});
  check_conv_gradients({.batch = 2, .in_channels = 3, .in_h = 6, .in_w = 6, .out_channels = 4, .kernel_h = 3,
                        .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 2, .pad_w = 0, .groups = 1,
                        .bias = true});
  check_conv_gradients({.batch = 3, .in_channels = 4, .in_h = 6, .in_w = 5, .out_channels = 3, .kernel_h = 3,
                        .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1,
                        .bias = true});
  check_conv_gradients({.batch = 2, .in_channels = 4, .in_h = 5, .in_w = 7, .out_channels = 4, .kernel_h = 3,
                        .kernel_w = 5, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 2, .groups = 2,
                        .bias = false});
  check_conv_gradients({.batch = 5, .in_channels = 2, .in_h = 5, .in_w = 4, .out_channels = 16, .kernel_h = 3,
                        .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1,
                        .bias = true});
  check_conv_gradients({.batch = 2, .in_channels = 3, .in_h = 5, .in_w = 6, .out_channels = 2, .kernel_h = 2,
                        .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 0, .pad_w = 1, .groups = 1,
                        .bias = false});
}

// The weight gradient against its definition, in double, on the paths that build operands
// of their own: by stacked kernel rows (from 16 input channels to fewer than 32 output
// channels: strides 1 to 3, phases with fewer rows than others, 11 and 13 padded rows),
// transposed with dY transposed (16 to 63 output channels: over im2col by kernel rows,
// dilated, and 1x1 reading x directly), and, where the CPU has AVX2, channels-last
// (3x3 padded by 1 with a multiple of 16 input channels: stride 2 on odd sizes, output
// channels in threes with one or two left over, two blocks of 16 input channels, 9 images
// in groups of 2 and 3, a 1x1 image whose taps are all border but the centre; the stacked
// kernel rows of stride 2 then with a 4x3 kernel); groups, sizes that are not multiples of
// 4 or 8, and 5 images in uneven groups. The scratch starts as NaN, which no product may meet.
TEST(KernelConv2d, WeightGradientPathsMatchTheDefinition) {
  const Conv2dShape shapes[] = {
      {.batch = 5, .in_channels = 16, .in_h = 9, .in_w = 7, .out_channels = 5, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false},
      {.batch = 3, .in_channels = 17, .in_h = 11, .in_w = 10, .out_channels = 16, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 3, .stride_w = 3, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true},
      {.batch = 4, .in_channels = 32, .in_h = 6, .in_w = 5, .out_channels = 6, .kernel_h = 3, .kernel_w = 2,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 0, .groups = 2, .bias = false},
      {.batch = 2, .in_channels = 16, .in_h = 8, .in_w = 9, .out_channels = 31, .kernel_h = 4, .kernel_w = 3,
       .stride_h = 2, .stride_w = 2, .pad_h = 2, .pad_w = 1, .groups = 1, .bias = false},
      {.batch = 5, .in_channels = 24, .in_h = 5, .in_w = 7, .out_channels = 33, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false},
      {.batch = 9, .in_channels = 16, .in_h = 5, .in_w = 7, .out_channels = 5, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false},
      {.batch = 3, .in_channels = 32, .in_h = 4, .in_w = 6, .out_channels = 7, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true},
      {.batch = 2, .in_channels = 16, .in_h = 1, .in_w = 1, .out_channels = 3, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false},
      {.batch = 3, .in_channels = 3, .in_h = 9, .in_w = 7, .out_channels = 20, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 2, .pad_w = 2, .groups = 1, .bias = false, .dilation = 2},
      {.batch = 3, .in_channels = 40, .in_h = 3, .in_w = 5, .out_channels = 18, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 1, .stride_w = 1, .pad_h = 0, .pad_w = 0, .groups = 1, .bias = true},
      // A stride per axis: channels-last, stacked kernel rows, transposed.
      {.batch = 5, .in_channels = 16, .in_h = 9, .in_w = 7, .out_channels = 5, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false},
      {.batch = 3, .in_channels = 17, .in_h = 11, .in_w = 10, .out_channels = 16, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 3, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true},
      {.batch = 4, .in_channels = 24, .in_h = 7, .in_w = 9, .out_channels = 33, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false}};
  for (const Conv2dShape& s : shapes) {
    const std::int64_t cin = s.in_channels_per_group(), cout = s.out_channels_per_group();
    const std::vector<float> x = random_values(s.batch * s.in_channels * s.in_h * s.in_w, 7),
                             dy = random_values(s.batch * s.out_channels * s.out_h() * s.out_w(), 8);
    std::vector<float> scratch(conv2d_scratch_elements(s), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> dweight(s.out_channels * cin * s.kernel_h * s.kernel_w), dbias(s.bias ? s.out_channels : 0);
    conv2d_backward_params(s, dy, x, dweight, dbias, scratch);
    for (std::int64_t o = 0; o < s.out_channels; ++o)
      for (std::int64_t c = 0; c < cin; ++c)
        for (std::int64_t i = 0; i < s.kernel_h; ++i)
          for (std::int64_t j = 0; j < s.kernel_w; ++j) {
            double want = 0;
            for (std::int64_t n = 0; n < s.batch; ++n)
              for (std::int64_t oy = 0; oy < s.out_h(); ++oy)
                for (std::int64_t ox = 0; ox < s.out_w(); ++ox) {
                  const std::int64_t iy = oy * s.stride_h - s.pad_h + i * s.dilation,
                                     ix = ox * s.stride_w - s.pad_w + j * s.dilation;
                  if (iy < 0 || iy >= s.in_h || ix < 0 || ix >= s.in_w) continue;
                  want += static_cast<double>(dy[((n * s.out_channels + o) * s.out_h() + oy) * s.out_w() + ox]) *
                          x[((n * s.in_channels + o / cout * cin + c) * s.in_h + iy) * s.in_w + ix];
                }
            ASSERT_NEAR(dweight[((o * cin + c) * s.kernel_h + i) * s.kernel_w + j], want, 1e-4)
                << s.in_channels << " -> " << s.out_channels << ", stride " << s.stride_h << "x" << s.stride_w
                << ", weight (" << o << ", " << c << ", " << i << ", " << j << ")";
          }
  }
}

// Which convolutions take their weight gradient channels-last (conv_channels_last.h): the 3x3
// ones padded by 1, of stride 1 or 2, with a multiple of 16 input channels, on a CPU with
// AVX2 (the forward with AVX-512 only). Elsewhere none, and the tests above check the other
// paths on the same shapes.
TEST(KernelConv2d, ChannelsLastWeightGradientAppliesByShapeAndCpu) {
#if defined(__x86_64__)
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = avx512 || (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
#else
  const bool avx512 = false, avx2 = false;
#endif
  const Conv2dShape same{.batch = 32, .in_channels = 16, .in_h = 32, .in_w = 32, .out_channels = 16, .kernel_h = 3,
                         .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1,
                         .bias = false};
  EXPECT_EQ(detail::channels_last_weight_gradient_applies(same), avx2);
  Conv2dShape other = same;
  other.in_channels = 24;
  EXPECT_FALSE(detail::channels_last_weight_gradient_applies(other));
  other = same;
  other.stride_h = other.stride_w = 2;
  EXPECT_EQ(detail::channels_last_weight_gradient_applies(other), avx2);
  other.stride_w = 1;
  EXPECT_EQ(detail::channels_last_weight_gradient_applies(other), avx2);
  other.stride_h = other.stride_w = 3;
  EXPECT_FALSE(detail::channels_last_weight_gradient_applies(other));
  other = same;
  other.pad_w = 0;
  EXPECT_FALSE(detail::channels_last_weight_gradient_applies(other));
  other = same;
  other.kernel_w = 5;
  other.pad_w = 2;
  EXPECT_FALSE(detail::channels_last_weight_gradient_applies(other));
  other = same;
  other.in_channels = other.out_channels = 32;
  other.groups = 2;
  EXPECT_FALSE(detail::channels_last_weight_gradient_applies(other));
  // The forward needs 32 output channels at a time and rows of 8.
  EXPECT_FALSE(detail::channels_last_forward_applies(same));
  other = same;
  other.out_channels = 64;
  EXPECT_EQ(detail::channels_last_forward_applies(other), avx512);
  other.in_w = 12;
  EXPECT_FALSE(detail::channels_last_forward_applies(other));
}

// The forward, the input gradient and (with `weight_gradient`) the weight gradient of a 3x3
// convolution s against their definitions in double, within `tolerance`; the scratch starts
// as NaN.
void expect_3x3_passes_match_the_definition(const Conv2dShape& s, unsigned seed, double tolerance,
                                            bool weight_gradient) {
  const std::int64_t in_plane = s.in_h * s.in_w, out_plane = s.out_h() * s.out_w();
  const std::vector<float> x = random_values(s.batch * s.in_channels * in_plane, seed),
                           weight = random_values(s.out_channels * s.in_channels * 9, seed + 1),
                           bias = random_values(s.bias ? s.out_channels : 0, seed + 2),
                           dy = random_values(s.batch * s.out_channels * out_plane, seed + 3);
  std::vector<float> scratch(conv2d_scratch_elements(s), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> y(dy.size()), dx(x.size()), dweight(weight.size()), dbias(bias.size());
  conv2d_forward(s, x, weight, bias, y, scratch);
  conv2d_backward_input(s, dy, weight, dx, scratch);
  if (weight_gradient) conv2d_backward_params(s, dy, x, dweight, dbias, scratch);
  const std::string shape = std::to_string(s.in_channels) + " -> " + std::to_string(s.out_channels) + ", stride " +
                            std::to_string(s.stride_h) + "x" + std::to_string(s.stride_w);
  std::vector<float> want = direct_conv(s, x, weight);
  for (std::size_t k = 0; k < want.size(); ++k) {
    if (s.bias) want[k] += bias[k / out_plane % s.out_channels];
    ASSERT_NEAR(y[k], want[k], tolerance) << shape << ", output " << k;
  }
  std::vector<double> want_dx(x.size(), 0.0), want_dw(weight.size(), 0.0);
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t o = 0; o < s.out_channels; ++o)
      for (std::int64_t oy = 0; oy < s.out_h(); ++oy)
        for (std::int64_t ox = 0; ox < s.out_w(); ++ox) {
          const double g = dy[((n * s.out_channels + o) * s.out_h() + oy) * s.out_w() + ox];
          for (std::int64_t c = 0; c < s.in_channels; ++c)
            for (std::int64_t i = 0; i < 3; ++i)
              for (std::int64_t j = 0; j < 3; ++j) {
                const std::int64_t iy = oy * s.stride_h - s.pad_h + i, ix = ox * s.stride_w - s.pad_w + j;
                if (iy < 0 || iy >= s.in_h || ix < 0 || ix >= s.in_w) continue;
                const std::int64_t at = ((n * s.in_channels + c) * s.in_h + iy) * s.in_w + ix,
                                   w = (o * s.in_channels + c) * 9 + i * 3 + j;
                want_dx[at] += g * weight[w];
                want_dw[w] += g * x[at];
              }
        }
  for (std::size_t k = 0; k < dx.size(); ++k) ASSERT_NEAR(dx[k], want_dx[k], tolerance) << shape << ", input gradient " << k;
  if (!weight_gradient) return;
  for (std::size_t k = 0; k < dweight.size(); ++k)
    ASSERT_NEAR(dweight[k], want_dw[k], tolerance) << shape << ", weight gradient " << k;
}

// The forward and the input gradient channels-last (where the CPU has AVX-512: 32 or 64
// output channels, rows of 8 or 16 outputs, stride 2 on an odd height, two blocks of 16
// input channels, a bias added after). A stride-1 input gradient is the forward of the
// swapped convolution: 32 -> 32 goes channels-last, 16 -> 32 not (16 output channels), nor
// stride 2.
TEST(KernelConv2d, ChannelsLastForwardAndInputGradientMatchTheDefinition) {
  const Conv2dShape shapes[] = {
      {.batch = 3, .in_channels = 16, .in_h = 5, .in_w = 8, .out_channels = 32, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true},
      {.batch = 2, .in_channels = 32, .in_h = 7, .in_w = 16, .out_channels = 64, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false},
      {.batch = 5, .in_channels = 32, .in_h = 3, .in_w = 16, .out_channels = 32, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false},
      {.batch = 2, .in_channels = 16, .in_h = 7, .in_w = 16, .out_channels = 32, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true},
      {.batch = 3, .in_channels = 32, .in_h = 5, .in_w = 16, .out_channels = 32, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false}};
  for (const Conv2dShape& s : shapes) expect_3x3_passes_match_the_definition(s, 21, 1e-4, false);
}

// Convolutions too large for their images to go to the threads but with few output
// positions (fewer than 64) put the columns of 4 images side by side and take each pass as
// one product a chunk: stride 1 at 7x7 (resnet18's last layers; 5 images, so a chunk of 4
// and one of 1) and stride 2 from 13x13, with a bias.
TEST(KernelConv2d, ImagesSideBySideMatchTheDefinition) {
  const Conv2dShape shapes[] = {
      {.batch = 5, .in_channels = 96, .in_h = 7, .in_w = 7, .out_channels = 256, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true},
      {.batch = 2, .in_channels = 96, .in_h = 13, .in_w = 13, .out_channels = 256, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false},
      {.batch = 2, .in_channels = 96, .in_h = 7, .in_w = 13, .out_channels = 256, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true}};
  for (const Conv2dShape& s : shapes) expect_3x3_passes_match_the_definition(s, 31, 1e-3, true);
}

TEST(KernelConv2d, GradientsMatchFiniteDifferencesDepthwise) {
  check_conv_gradients({.batch = 2, .in_channels = 3, .in_h = 5, .in_w = 5, .out_channels = 3, .kernel_h = 3,
                        .kernel_w = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 3,
                        .bias = false});
  check_conv_gradients({.batch = 2, .in_channels = 3, .in_h = 6, .in_w = 5, .out_channels = 3, .kernel_h = 3,
                        .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 3,
                        .bias = true});
}

// Dilated (DeepLab's, ONNX's `dilations`): tap (i, j) reads i dilation rows and j dilation
// columns from the window's corner. Every path: im2col with whole-row copies (stride 1,
// 2 pad = dilation (kernel - 1): as many output as input columns), row by row, strided,
// grouped, depthwise; against the definition, and the gradients to finite differences.
TEST(KernelConv2d, DilatedMatchesTheDefinitionAndItsGradientsFiniteDifferences) {
  const std::vector<Conv2dShape> shapes{
      {.batch = 3, .in_channels = 4, .in_h = 7, .in_w = 6, .out_channels = 3, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 2, .pad_w = 2, .groups = 1, .bias = true, .dilation = 2},
      {.batch = 2, .in_channels = 4, .in_h = 9, .in_w = 8, .out_channels = 4, .kernel_h = 3, .kernel_w = 2,
       .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 0, .groups = 2, .bias = false, .dilation = 3},
      {.batch = 2, .in_channels = 3, .in_h = 7, .in_w = 7, .out_channels = 3, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 2, .pad_w = 2, .groups = 3, .bias = true, .dilation = 2},
      {.batch = 2, .in_channels = 2, .in_h = 6, .in_w = 9, .out_channels = 2, .kernel_h = 2, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 0, .pad_w = 1, .groups = 1, .bias = false, .dilation = 2},
      {.batch = 2, .in_channels = 2, .in_h = 9, .in_w = 8, .out_channels = 3, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 1, .pad_h = 2, .pad_w = 2, .groups = 1, .bias = true, .dilation = 2}};
  for (const Conv2dShape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << "dilation " << s.dilation << ", groups " << s.groups);
    const std::vector<float> x = random_values(s.batch * s.in_channels * s.in_h * s.in_w, 7),
                             weight = random_values(s.out_channels * s.in_channels_per_group() * s.kernel_h * s.kernel_w, 8);
    Conv2dShape unbiased = s;
    unbiased.bias = false;
    const std::vector<float> got = conv(unbiased, x, weight, {}), want = direct_conv(unbiased, x, weight);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], want[k], 1e-5f) << "output " << k;
    check_conv_gradients(s);
  }
  // 3 taps dilated by 4 span 9 rows: they do not fit 6 rows padded by 1.
  EXPECT_THROW(validate(Conv2dShape{.batch = 1, .in_channels = 1, .in_h = 6, .in_w = 6, .out_channels = 1,
                                    .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1, .dilation = 4}),
               InputError);
}

TEST(KernelConv2d, GradientsMatchFiniteDifferencesPointwise) {
  const Conv2dShape s{.batch = 2, .in_channels = 3, .in_h = 3, .in_w = 4, .out_channels = 5, .kernel_h = 1,
                      .kernel_w = 1, .stride_h = 1, .stride_w = 1, .pad_h = 0, .pad_w = 0, .groups = 1, .bias = true};
  // Reads its input directly: no im2col buffer, only the weight-gradient sums of the second
  // image (the batch's images are summed in groups).
  EXPECT_EQ(conv2d_scratch_elements(s), 5 * 3);
  check_conv_gradients(s);
}

TEST(KernelConv2d, RepeatedCallsAreBitIdentical) {
  const Conv2dShape s{.batch = 2, .in_channels = 4, .in_h = 7, .in_w = 7, .out_channels = 8, .kernel_h = 3,
                      .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true};
  const std::vector<float> x = random_values(2 * 4 * 49, 1), weight = random_values(8 * 4 * 9, 2),
                           bias = random_values(8, 3);
  const std::vector<float> first = conv(s, x, weight, bias);
  EXPECT_TRUE(bit_identical(conv(s, x, weight, bias), first));
}

TEST(KernelConv2d, BadShapesAndBuffersAreRejected) {
  Conv2dShape s{.batch = 1, .in_channels = 3, .in_h = 4, .in_w = 4, .out_channels = 4, .kernel_h = 3,
                .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 0, .pad_w = 0, .groups = 2, .bias = false};
  EXPECT_THROW(validate(s), InputError);  // 2 groups do not divide 3 channels
  s.groups = 1;
  s.kernel_h = s.kernel_w = 5;
  EXPECT_THROW(validate(s), InputError);  // a 5x5 kernel on a 4x4 image
  s.kernel_h = s.kernel_w = 3;
  std::vector<float> x(48), weight(4 * 27), y(4 * 4), small_scratch(conv2d_scratch_elements(s) - 1);
  EXPECT_THROW(conv2d_forward(s, x, weight, {}, y, small_scratch), InternalError);
}

}  // namespace
}  // namespace poet::kernels
