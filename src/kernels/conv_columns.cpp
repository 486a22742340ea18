#include "conv_columns.h"

#include <algorithm>

#include "conv_geometry.h"
#include "parallel_for.h"

namespace poet::kernels::detail {
namespace {

// One tap (i, j) of a stride-1 convolution with as many output columns as input columns:
// its rows are one contiguous run of the input plane, shifted by the tap, so they are copied
// at once and the columns that fall outside the image (wrapped into the neighbouring row)
// are then zeroed. The same values as row by row, in fewer and longer copies.
void im2col_tap_same_width(const Conv2dShape& s, const float* plane, int i, int j, float* out) {
  const std::int64_t oh = s.out_h(), w = s.in_w, area = input_plane(s);
  const std::int64_t di = std::int64_t{i} * s.dilation, dj = std::int64_t{j} * s.dilation;
  const std::int64_t oy_begin = std::clamp<std::int64_t>(s.pad_h - di, 0, oh);
  const std::int64_t oy_end = std::clamp<std::int64_t>(s.in_h + s.pad_h - di, oy_begin, oh);
  const std::int64_t shift = (di - s.pad_h) * w + (dj - s.pad_w);  // input index - output index
  const std::int64_t begin = oy_begin * w, end = oy_end * w;
  const std::int64_t copy_begin = std::clamp(-shift, begin, end), copy_end = std::clamp(area - shift, copy_begin, end);
  std::fill(out, out + copy_begin, 0.0f);
  std::copy(plane + copy_begin + shift, plane + copy_end + shift, out + copy_begin);
  std::fill(out + copy_end, out + oh * w, 0.0f);
  // Column by column: a row has only kernel / 2 such columns at each end, and zeroing them
  // row by row compiled into a memset call per row (a third of im2col's time, perf).
  const ColumnRange inside = inside_columns(s, j);
  const auto zero_column = [&](std::int64_t ox) {
    for (std::int64_t oy = oy_begin; oy < oy_end; ++oy) out[oy * w + ox] = 0.0f;
  };
  for (std::int64_t ox = 0; ox < inside.begin; ++ox) zero_column(ox);
  for (std::int64_t ox = inside.end; ox < w; ++ox) zero_column(ox);
}

}  // namespace

void im2col(const Conv2dShape& s, const float* x, float* cols, std::int64_t ld) {
  const std::int64_t oh = s.out_h(), ow = s.out_w();
  if (ld == 0) ld = oh * ow;
  if (s.stride_h == 1 && s.stride_w == 1 && ow == s.in_w) {
    detail::parallel_for(s.in_channels_per_group(), s.kernel_h * s.kernel_w * oh * ow, [&](std::int64_t c) {
      for (int i = 0; i < s.kernel_h; ++i)
        for (int j = 0; j < s.kernel_w; ++j)
          im2col_tap_same_width(s, x + c * input_plane(s), i, j, cols + ((c * s.kernel_h + i) * s.kernel_w + j) * ld);
    });
    return;
  }
  detail::parallel_for(s.in_channels_per_group(), s.kernel_h * s.kernel_w * oh * ow, [&](std::int64_t c) {
    const float* plane = x + c * input_plane(s);
    for (int i = 0; i < s.kernel_h; ++i) {
      for (int j = 0; j < s.kernel_w; ++j) {
        float* out = cols + ((c * s.kernel_h + i) * s.kernel_w + j) * ld;
        const ColumnRange inside = inside_columns(s, j);
        for (std::int64_t oy = 0; oy < oh; ++oy) {
          const std::int64_t iy = oy * s.stride_h - s.pad_h + i * s.dilation;
          float* out_row = out + oy * ow;
          if (iy < 0 || iy >= s.in_h) {
            std::fill(out_row, out_row + ow, 0.0f);
            continue;
          }
          const std::int64_t row_start = iy * s.in_w - s.pad_w + j * s.dilation;  // the input index of ox = 0
          // Rows are short (32 elements at CIFAR sizes): plain loops the compiler vectorizes,
          // no library call per row.
          for (std::int64_t ox = 0; ox < inside.begin; ++ox) out_row[ox] = 0.0f;
          with_column_stride(s, [&](auto stride) {
            for (std::int64_t ox = inside.begin; ox < inside.end; ++ox) out_row[ox] = plane[row_start + ox * stride];
          });
          for (std::int64_t ox = inside.end; ox < ow; ++ox) out_row[ox] = 0.0f;
        }
      }
    }
  });
}

void col2im_add(const Conv2dShape& s, const float* cols, float* dx, std::int64_t ld) {
  const std::int64_t oh = s.out_h(), ow = s.out_w();
  if (ld == 0) ld = oh * ow;
  detail::parallel_for(s.in_channels_per_group(), s.kernel_h * s.kernel_w * oh * ow, [&](std::int64_t c) {
    float* plane = dx + c * input_plane(s);
    for (int i = 0; i < s.kernel_h; ++i) {
      for (int j = 0; j < s.kernel_w; ++j) {
        const float* in = cols + ((c * s.kernel_h + i) * s.kernel_w + j) * ld;
        const ColumnRange inside = inside_columns(s, j);
        for (std::int64_t oy = 0; oy < oh; ++oy) {
          const std::int64_t iy = oy * s.stride_h - s.pad_h + i * s.dilation;
          if (iy < 0 || iy >= s.in_h) continue;
          const std::int64_t row_start = iy * s.in_w - s.pad_w + j * s.dilation;
          const float* in_row = in + oy * ow;
          with_column_stride(s, [&](auto stride) {
            for (std::int64_t ox = inside.begin; ox < inside.end; ++ox) plane[row_start + ox * stride] += in_row[ox];
          });
        }
      }
    }
  });
}

}  // namespace poet::kernels::detail
