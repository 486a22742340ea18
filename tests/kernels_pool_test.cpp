// Max, average and global average pooling.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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
  const Pool2dShape s{.batch = 1, .channels = 1, .in_h = 2, .in_w = 4, .kernel_h = 2, .kernel_w = 2, .stride_h = 2,
                      .stride_w = 2};
  const std::vector<float> x{1, 3, 3, 0, 3, 2, 1, 3};
  std::vector<float> y(2), dx(8);
  std::vector<std::uint8_t> indices(2);
  max_pool2d_forward(s, x, y);
  EXPECT_EQ(y, (std::vector<float>{3, 3}));
  max_pool2d_indices(s, x, std::span(indices));
  EXPECT_EQ(indices, (std::vector<std::uint8_t>{1, 0}));  // positions in the window, row-major
  max_pool2d_backward(s, std::vector<float>{10, 20}, std::span<const std::uint8_t>(indices), dx);
  EXPECT_EQ(dx, (std::vector<float>{0, 10, 20, 0, 0, 0, 0, 0}));
}

// The backward as the runtime takes it: the indices of x, then dY routed through them.
template <typename Index>
std::vector<float> backward_through_indices(const Pool2dShape& s, std::span<const float> dy, std::span<const float> x) {
  std::vector<Index> indices(out_size(s));
  std::vector<float> dx(in_size(s));
  max_pool2d_indices(s, x, std::span(indices));
  max_pool2d_backward(s, dy, std::span<const Index>(indices), dx);
  return dx;
}

TEST(KernelMaxPool2d, GradientMatchesFiniteDifferencesOverlappingPadded) {
  const Pool2dShape s{.batch = 2, .channels = 2, .in_h = 4, .in_w = 5, .kernel_h = 3, .kernel_w = 3,
                      .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1};
  const std::vector<float> x = distinct_values(in_size(s), 1), dy = random_values(out_size(s), 2);
  const std::vector<float> dx = backward_through_indices<std::uint8_t>(s, dy, x);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { max_pool2d_forward(s, in, out); }, x, out_size(s), dy, dx));
}

// The backward that finds each window's first maximum again from x (the kernel before
// indices were kept), written out plainly.
std::vector<float> backward_from_x(const Pool2dShape& s, std::span<const float> dy, std::span<const float> x) {
  std::vector<float> dx(in_size(s), 0.0f);
  std::size_t out = 0;
  for (std::int64_t plane = 0; plane < s.batch * s.channels; ++plane)
    for (std::int64_t oy = 0; oy < s.out_h(); ++oy)
      for (std::int64_t ox = 0; ox < s.out_w(); ++ox, ++out) {
        const std::int64_t top = oy * s.stride_h - s.pad_h, left = ox * s.stride_w - s.pad_w;
        std::int64_t best = -1;
        for (std::int64_t iy = std::max<std::int64_t>(top, 0); iy < std::min(top + s.kernel_h, s.in_h); ++iy)
          for (std::int64_t ix = std::max<std::int64_t>(left, 0); ix < std::min(left + s.kernel_w, s.in_w); ++ix) {
            const std::int64_t at = plane * s.in_h * s.in_w + iy * s.in_w + ix;
            if (best < 0 || x[static_cast<std::size_t>(at)] > x[static_cast<std::size_t>(best)]) best = at;
          }
        dx[static_cast<std::size_t>(best)] += dy[out];
      }
  return dx;
}

// Overlapping windows (so that several dY add into one dX, in the same order), padding,
// many ties (values from a handful), every index type: the same bits as finding the
// maxima again from x.
TEST(KernelMaxPool2d, BackwardThroughIndicesEqualsFindingTheMaximaAgainBitForBit) {
  const std::vector<Pool2dShape> shapes{
      {.batch = 2, .channels = 3, .in_h = 7, .in_w = 6, .kernel_h = 3, .kernel_w = 3, .stride_h = 1, .stride_w = 1,
       .pad_h = 1, .pad_w = 1},
      {.batch = 1, .channels = 2, .in_h = 9, .in_w = 9, .kernel_h = 3, .kernel_w = 2, .stride_h = 2, .stride_w = 2,
       .pad_h = 1, .pad_w = 0},
      {.batch = 3, .channels = 1, .in_h = 8, .in_w = 8, .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2},
      // A stride per axis (a spectrogram's (2, 1) and (1, 2) pooling).
      {.batch = 2, .channels = 2, .in_h = 8, .in_w = 7, .kernel_h = 2, .kernel_w = 1, .stride_h = 2, .stride_w = 1},
      {.batch = 1, .channels = 3, .in_h = 5, .in_w = 9, .kernel_h = 3, .kernel_w = 3, .stride_h = 1, .stride_w = 2,
       .pad_h = 1, .pad_w = 1}};
  for (const Pool2dShape& s : shapes) {
    std::vector<float> x = random_values(in_size(s), 3, -2.0f, 2.0f);
    for (float& v : x) v = std::round(v);  // five values: ties in most windows
    const std::vector<float> dy = random_values(out_size(s), 4);
    const std::vector<float> expected = backward_from_x(s, dy, x);
    for (const std::vector<float>& dx : {backward_through_indices<std::uint8_t>(s, dy, x),
                                         backward_through_indices<std::uint16_t>(s, dy, x),
                                         backward_through_indices<std::uint32_t>(s, dy, x)})
      EXPECT_EQ(0, std::memcmp(dx.data(), expected.data(), dx.size() * sizeof(float)))
          << s.kernel_h << "x" << s.kernel_w << " windows, stride " << s.stride_h << "x" << s.stride_w;
  }
}

// Each window on its own, in row-major order: its maximum (std::max from the first
// element) and the position of its first maximum (strictly greater to move on).
struct WindowResult {
  std::vector<float> max;
  std::vector<std::uint8_t> position;
};

WindowResult one_window_at_a_time(const Pool2dShape& s, const std::vector<float>& x) {
  WindowResult r;
  for (std::int64_t plane = 0; plane < s.batch * s.channels; ++plane)
    for (std::int64_t oy = 0; oy < s.out_h(); ++oy)
      for (std::int64_t ox = 0; ox < s.out_w(); ++ox) {
        const std::int64_t top = oy * s.stride_h - s.pad_h, left = ox * s.stride_w - s.pad_w;
        const auto value = [&](std::int64_t iy, std::int64_t ix) {
          return x[static_cast<std::size_t>((plane * s.in_h + iy) * s.in_w + ix)];
        };
        const std::int64_t y0 = std::max<std::int64_t>(top, 0), x0 = std::max<std::int64_t>(left, 0);
        float most = value(y0, x0), best = most;
        std::int64_t position = (y0 - top) * s.kernel_w + x0 - left;
        for (std::int64_t iy = y0; iy < std::min(top + s.kernel_h, s.in_h); ++iy)
          for (std::int64_t ix = x0; ix < std::min(left + s.kernel_w, s.in_w); ++ix) {
            most = std::max(most, value(iy, ix));
            if (value(iy, ix) > best) best = value(iy, ix), position = (iy - top) * s.kernel_w + ix - left;
          }
        r.max.push_back(most);
        r.position.push_back(static_cast<std::uint8_t>(position));
      }
  return r;
}

// The kernels take a row's windows that the image's edges do not cut together: the same
// bits as one window at a time, with ties, NaNs (kept only where a window starts with one),
// signed zeros, rows longer than the kernels' 256-column blocks, and rows whose every
// window the edges cut.
TEST(KernelMaxPool2d, RowsAtOnceGiveTheBitsOfOneWindowAtATime) {
  const std::vector<Pool2dShape> shapes{
      {.batch = 1, .channels = 2, .in_h = 5, .in_w = 601, .kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2,
       .pad_h = 1, .pad_w = 1},
      {.batch = 2, .channels = 3, .in_h = 7, .in_w = 6, .kernel_h = 3, .kernel_w = 3, .stride_h = 1, .stride_w = 1,
       .pad_h = 1, .pad_w = 1},
      {.batch = 1, .channels = 2, .in_h = 9, .in_w = 9, .kernel_h = 3, .kernel_w = 2, .stride_h = 2, .stride_w = 2,
       .pad_h = 1, .pad_w = 0},
      {.batch = 1, .channels = 1, .in_h = 6, .in_w = 6, .kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2,
       .ceil_mode = true},
      {.batch = 1, .channels = 1, .in_h = 2, .in_w = 2, .kernel_h = 3, .kernel_w = 3, .stride_h = 1, .stride_w = 1,
       .pad_h = 1, .pad_w = 1},
      {.batch = 1, .channels = 2, .in_h = 6, .in_w = 301, .kernel_h = 1, .kernel_w = 3, .stride_h = 1, .stride_w = 3},
      {.batch = 2, .channels = 1, .in_h = 9, .in_w = 8, .kernel_h = 3, .kernel_w = 2, .stride_h = 3, .stride_w = 1,
       .pad_h = 1, .pad_w = 1, .ceil_mode = true}};
  for (const Pool2dShape& s : shapes) {
    std::vector<float> x = random_values(in_size(s), 5, -2.0f, 2.0f);
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = std::round(x[i]);  // five values: ties in most windows
      if (i % 7 == 3) x[i] = std::nanf("");
      if (i % 11 == 5) x[i] = -0.0f;
    }
    const WindowResult expected = one_window_at_a_time(s, x);
    std::vector<float> y(out_size(s));
    std::vector<std::uint8_t> indices(out_size(s));
    max_pool2d_forward(s, x, y);
    max_pool2d_indices(s, x, std::span(indices));
    EXPECT_EQ(0, std::memcmp(y.data(), expected.max.data(), y.size() * sizeof(float)))
        << s.in_h << "x" << s.in_w << ", " << s.kernel_h << "x" << s.kernel_w << " windows, stride " << s.stride_h
        << "x" << s.stride_w;
    EXPECT_EQ(indices, expected.position) << s.in_h << "x" << s.in_w;
  }
}

// ceil_mode (SqueezeNet's and GoogLeNet's pools): the output size rounds up, PyTorch's
// rule, and the last window overhangs the image, clipped to it.
TEST(KernelMaxPool2d, CeilModeAddsAPartialWindowWithItsGradient) {
  // 8 rows, 3x3 windows by 2: floor 3 positions, ceil 4 (the last covers rows 6 and 7 only).
  const Pool2dShape s{.batch = 2, .channels = 2, .in_h = 8, .in_w = 7, .kernel_h = 3, .kernel_w = 3,
                      .stride_h = 2, .stride_w = 2, .ceil_mode = true};
  EXPECT_EQ(s.out_h(), 4);
  EXPECT_EQ(s.out_w(), 3);  // (7 - 3) / 2 is whole: no partial window
  // A window starting at the image's end would hold padding alone: PyTorch drops it.
  EXPECT_EQ(pool_positions(5, 2, 2, 1, true), 3);  // not 4, whose window would start at row 5
  EXPECT_EQ(pool_positions(5, 2, 2, 1, false), 3);
  EXPECT_EQ(pool_positions(6, 3, 2, 0, true), 3);
  const std::vector<float> x = distinct_values(in_size(s), 5), dy = random_values(out_size(s), 6);
  std::vector<float> y(out_size(s));
  max_pool2d_forward(s, x, y);
  // Output (plane 0, row 3, column 0): the maximum of rows 6 and 7, columns 0 to 2.
  float expected = x[6 * 7];
  for (int r = 6; r < 8; ++r)
    for (int c = 0; c < 3; ++c) expected = std::max(expected, x[static_cast<std::size_t>(r * 7 + c)]);
  EXPECT_EQ(y[3 * 3], expected);
  const std::vector<float> dx = backward_through_indices<std::uint8_t>(s, dy, x);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { max_pool2d_forward(s, in, out); }, x, out_size(s), dy, dx));
  EXPECT_EQ(0, std::memcmp(dx.data(), backward_from_x(s, dy, x).data(), dx.size() * sizeof(float)));
}

TEST(KernelAvgPool2d, CeilModeIsRefused) {
  const Pool2dShape s{.batch = 1, .channels = 1, .in_h = 4, .in_w = 4, .kernel_h = 3, .kernel_w = 3,
                      .stride_h = 2, .stride_w = 2, .ceil_mode = true};
  std::vector<float> x(in_size(s)), y(out_size(s));
  EXPECT_THROW(avg_pool2d_forward(s, x, y), InputError);
}

TEST(KernelMaxPool2d, IndicesTooNarrowForTheWindowAreRefused) {
  const Pool2dShape s{.batch = 1, .channels = 1, .in_h = 17, .in_w = 17, .kernel_h = 17, .kernel_w = 17, .stride_h = 1,
                      .stride_w = 1};
  const std::vector<float> x(in_size(s), 1.0f);
  std::vector<std::uint8_t> narrow(1);
  std::vector<std::uint16_t> wide(1);
  EXPECT_THROW(max_pool2d_indices(s, x, std::span(narrow)), InputError);  // 289 positions
  max_pool2d_indices(s, x, std::span(wide));
  EXPECT_EQ(wide[0], 0);
}

TEST(KernelMaxPool2d, PaddingAsWideAsTheKernelIsRejected) {
  EXPECT_THROW(validate(Pool2dShape{.batch = 1, .channels = 1, .in_h = 4, .in_w = 4, .kernel_h = 2, .kernel_w = 2,
                                    .stride_h = 2, .stride_w = 2, .pad_h = 2, .pad_w = 0}),
               InputError);
}

TEST(KernelAvgPool2d, ForwardWorkedByHand) {
  const Pool2dShape s{.batch = 1, .channels = 1, .in_h = 2, .in_w = 4, .kernel_h = 2, .kernel_w = 2, .stride_h = 2,
                      .stride_w = 2};
  std::vector<float> y(2);
  avg_pool2d_forward(s, std::vector<float>{1, 3, 3, 0, 3, 2, 1, 4}, y);
  EXPECT_EQ(y, (std::vector<float>{2.25f, 2.0f}));
}

TEST(KernelAvgPool2d, GradientMatchesFiniteDifferences) {
  for (const auto& [stride_h, stride_w] : {std::pair{2, 2}, std::pair{2, 1}, std::pair{1, 3}}) {
    const Pool2dShape s{.batch = 2, .channels = 3, .in_h = 5, .in_w = 4, .kernel_h = 3, .kernel_w = 2,
                        .stride_h = stride_h, .stride_w = stride_w, .pad_h = 1, .pad_w = 1};
    const std::vector<float> x = random_values(in_size(s), 1), dy = random_values(out_size(s), 2);
    std::vector<float> dx(in_size(s));
    avg_pool2d_backward(s, dy, dx);
    EXPECT_TRUE(gradient_matches([&](auto in, auto out) { avg_pool2d_forward(s, in, out); }, x, out_size(s), dy, dx))
        << "stride " << stride_h << "x" << stride_w;
  }
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
