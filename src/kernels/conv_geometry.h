// Where a convolution's taps fall, shared by its kernels (kernels_conv.cpp, conv_depthwise.cpp):
// sizes, the output columns a tap reads inside the image, and loops over the taps by row.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels::detail {

// A 1x1, stride 1, unpadded convolution's im2col is its input itself.
inline bool reads_input_directly(const Conv2dShape& s) {
  return s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0;
}

inline std::int64_t patch_size(const Conv2dShape& s) { return s.in_channels_per_group() * s.kernel_h * s.kernel_w; }
inline std::int64_t positions(const Conv2dShape& s) { return s.out_h() * s.out_w(); }
inline std::int64_t input_plane(const Conv2dShape& s) { return s.in_h * s.in_w; }

// The output columns [begin, end) whose input column ox stride_w - pad_w + j dilation is
// inside the image: the loops over ox then run without a bounds test per element. (A tap
// (i, j) reads the input i dilation rows and j dilation columns from its window's corner.)
struct ColumnRange {
  std::int64_t begin, end;
};

inline ColumnRange inside_columns(const Conv2dShape& s, int j) {
  const std::int64_t shift = s.pad_w - std::int64_t{j} * s.dilation;
  if (s.stride_w == 1) {
    // Without the divisions: im2col calls this per tap and image (1.3% of a resnet18_cifar
    // step in perf with them).
    const std::int64_t ow = s.in_w + 2 * s.pad_w - s.span_w() + 1;
    return {std::clamp<std::int64_t>(shift, 0, ow), std::clamp<std::int64_t>(s.in_w + shift, 0, ow)};
  }
  const auto first_at_least = [&](std::int64_t x) {  // the least ox with ox stride_w - pad_w + j dilation >= x
    const std::int64_t need = x + shift;
    return need <= 0 ? 0 : (need + s.stride_w - 1) / s.stride_w;
  };
  const std::int64_t ow = s.out_w();
  return {std::min(first_at_least(0), ow), std::min(first_at_least(s.in_w), ow)};
}

inline bool is_depthwise(const Conv2dShape& s) {
  return s.groups > 1 && s.groups == s.in_channels && s.groups == s.out_channels;
}

// For every output row oy and kernel tap (i, j) whose input row is inside the image, in
// that order, calls visit(tap index, output index of ox = 0, input index of ox = 0, columns
// inside), so that the visitor's loop over ox runs without bounds tests: input index + ox
// stride_w. Row by row, all taps: the output row stays in the L1 cache while its taps add up
// (tap by tap over the whole plane, the depthwise forward was 17% of a mobilenet_v2 step).
template <typename Visit>
void for_each_tap_row(const Conv2dShape& s, Visit visit) {
  const std::int64_t oh = s.out_h(), ow = s.out_w();
  for (std::int64_t oy = 0; oy < oh; ++oy)
    for (int i = 0; i < s.kernel_h; ++i) {
      const std::int64_t iy = oy * s.stride_h - s.pad_h + i * s.dilation;
      if (iy < 0 || iy >= s.in_h) continue;
      for (int j = 0; j < s.kernel_w; ++j)
        visit(i * s.kernel_w + j, oy * ow, iy * s.in_w - s.pad_w + j * s.dilation, inside_columns(s, j));
    }
}

// Calls f(column stride), strides 1 and 2 as compile-time constants: the loops over ox then read
// contiguous floats or every other one, which the compiler vectorizes; with the stride a
// run-time value it loaded them one at a time (perf: most of the depthwise forward's time
// in mobilenet_v2; im2col's and col2im's strided rows 5.6% of a resnet18_cifar step).
template <typename F>
void with_column_stride(const Conv2dShape& s, F f) {
  if (s.stride_w == 1) return f(std::integral_constant<std::int64_t, 1>{});
  if (s.stride_w == 2) return f(std::integral_constant<std::int64_t, 2>{});
  f(static_cast<std::int64_t>(s.stride_w));
}

}  // namespace poet::kernels::detail
