// Convolution as GEMM: per image and group, an im2col buffer [K, P] (K = input channels of
// the group x kernel area, P = output positions) turns the convolution into W_g [Cout_g, K]
// x cols, its input gradient into W_g^T dY_g followed by col2im, and its weight gradient
// into dY_g cols^T summed over the batch. Depthwise convolutions (one input and one output
// channel per group) are computed directly instead: as GEMMs they are one-row products,
// one BLAS call per channel and image, that ran several times slower than the direct loops.
#include "poet/kernels/kernels_conv.h"

#include <algorithm>
#include <cstring>

#include "gemm.h"
#include "kernel_checks.h"
#include "parallel_for.h"

namespace poet::kernels {
namespace {

using detail::expect_at_least;
using detail::expect_size;
using detail::gemm;

// A 1x1, stride 1, unpadded convolution's im2col is its input itself.
bool reads_input_directly(const Conv2dShape& s) {
  return s.kernel_h == 1 && s.kernel_w == 1 && s.stride == 1 && s.pad_h == 0 && s.pad_w == 0;
}

std::int64_t patch_size(const Conv2dShape& s) { return s.in_channels_per_group() * s.kernel_h * s.kernel_w; }
std::int64_t positions(const Conv2dShape& s) { return s.out_h() * s.out_w(); }
std::int64_t input_plane(const Conv2dShape& s) { return s.in_h * s.in_w; }

// The output columns [begin, end) whose input column ox stride - pad_w + j is inside the
// image: the loops below then run without a bounds test per element.
struct ColumnRange {
  std::int64_t begin, end;
};

ColumnRange inside_columns(const Conv2dShape& s, int j) {
  const auto first_at_least = [&](std::int64_t x) {  // the least ox with ox stride - pad_w + j >= x
    const std::int64_t need = x + s.pad_w - j;
    return need <= 0 ? 0 : (need + s.stride - 1) / s.stride;
  };
  const std::int64_t ow = s.out_w();
  return {std::min(first_at_least(0), ow), std::min(first_at_least(s.in_w), ow)};
}

bool is_depthwise(const Conv2dShape& s) {
  return s.groups > 1 && s.groups == s.in_channels && s.groups == s.out_channels;
}

// For every kernel tap (i, j) and output row oy whose input row is inside the image, calls
// visit(tap index, output index of ox = 0, input index of ox = 0, columns inside), so that
// the visitor's loop over ox runs without bounds tests: input index + ox stride.
template <typename Visit>
void for_each_tap_row(const Conv2dShape& s, Visit visit) {
  const std::int64_t oh = s.out_h(), ow = s.out_w();
  for (int i = 0; i < s.kernel_h; ++i)
    for (int j = 0; j < s.kernel_w; ++j) {
      const ColumnRange inside = inside_columns(s, j);
      for (std::int64_t oy = 0; oy < oh; ++oy) {
        const std::int64_t iy = oy * s.stride - s.pad_h + i;
        if (iy >= 0 && iy < s.in_h) visit(i * s.kernel_w + j, oy * ow, iy * s.in_w - s.pad_w + j, inside);
      }
    }
}

// Per image and channel: y = bias + sum over taps of w[tap] x shifted, in tap order.
void depthwise_forward(const Conv2dShape& s, const float* x, const float* weight, const float* bias, float* y) {
  const std::int64_t taps = s.kernel_h * s.kernel_w, p = positions(s), area = input_plane(s);
  detail::parallel_for(s.batch * s.in_channels, p * taps, [&](std::int64_t plane) {
    const std::int64_t n = plane / s.in_channels, c = plane % s.in_channels;
    const float* in = x + (n * s.in_channels + c) * area;
    const float* w = weight + c * taps;
    float* out = y + (n * s.in_channels + c) * p;
    std::fill(out, out + p, s.bias ? bias[c] : 0.0f);
    for_each_tap_row(s, [&](std::int64_t tap, std::int64_t out_row, std::int64_t in_row, ColumnRange inside) {
      for (std::int64_t ox = inside.begin; ox < inside.end; ++ox) out[out_row + ox] += w[tap] * in[in_row + ox * s.stride];
    });
  });
}

void depthwise_backward_input(const Conv2dShape& s, const float* dy, const float* weight, float* dx) {
  const std::int64_t taps = s.kernel_h * s.kernel_w, p = positions(s), area = input_plane(s);
  detail::parallel_for(s.batch * s.in_channels, p * taps, [&](std::int64_t plane) {
    const std::int64_t n = plane / s.in_channels, c = plane % s.in_channels;
    const float* g = dy + (n * s.in_channels + c) * p;
    const float* w = weight + c * taps;
    float* out = dx + (n * s.in_channels + c) * area;
    std::fill(out, out + area, 0.0f);
    for_each_tap_row(s, [&](std::int64_t tap, std::int64_t out_row, std::int64_t in_row, ColumnRange inside) {
      for (std::int64_t ox = inside.begin; ox < inside.end; ++ox) out[in_row + ox * s.stride] += w[tap] * g[out_row + ox];
    });
  });
}

void depthwise_backward_weight(const Conv2dShape& s, const float* dy, const float* x, float* dweight) {
  const std::int64_t taps = s.kernel_h * s.kernel_w, p = positions(s), area = input_plane(s);
  std::fill(dweight, dweight + s.in_channels * taps, 0.0f);
  detail::parallel_for(s.in_channels, s.batch * p * taps, [&](std::int64_t c) {
    float* dw = dweight + c * taps;
    for (std::int64_t n = 0; n < s.batch; ++n) {
      const float* g = dy + (n * s.in_channels + c) * p;
      const float* in = x + (n * s.in_channels + c) * area;
      for_each_tap_row(s, [&](std::int64_t tap, std::int64_t out_row, std::int64_t in_row, ColumnRange inside) {
        float sum = 0.0f;
        for (std::int64_t ox = inside.begin; ox < inside.end; ++ox) sum += g[out_row + ox] * in[in_row + ox * s.stride];
        dw[tap] += sum;
      });
    }
  });
}

// cols[(c, i, j), (oy, ox)] = x[c, oy stride - pad_h + i, ox stride - pad_w + j], 0 outside.
void im2col(const Conv2dShape& s, const float* x, float* cols) {
  const std::int64_t oh = s.out_h(), ow = s.out_w();
  detail::parallel_for(s.in_channels_per_group(), s.kernel_h * s.kernel_w * oh * ow, [&](std::int64_t c) {
    const float* plane = x + c * input_plane(s);
    for (int i = 0; i < s.kernel_h; ++i) {
      for (int j = 0; j < s.kernel_w; ++j) {
        float* out = cols + ((c * s.kernel_h + i) * s.kernel_w + j) * oh * ow;
        const ColumnRange inside = inside_columns(s, j);
        for (std::int64_t oy = 0; oy < oh; ++oy) {
          const std::int64_t iy = oy * s.stride - s.pad_h + i;
          float* out_row = out + oy * ow;
          if (iy < 0 || iy >= s.in_h) {
            std::fill(out_row, out_row + ow, 0.0f);
            continue;
          }
          const std::int64_t row_start = iy * s.in_w - s.pad_w + j;  // the input index of ox = 0
          // Rows are short (32 elements at CIFAR sizes): plain loops and one memcpy, no calls
          // per padding element.
          for (std::int64_t ox = 0; ox < inside.begin; ++ox) out_row[ox] = 0.0f;
          if (s.stride == 1) {
            std::memcpy(out_row + inside.begin, plane + row_start + inside.begin,
                        static_cast<std::size_t>(inside.end - inside.begin) * sizeof(float));
          } else {
            for (std::int64_t ox = inside.begin; ox < inside.end; ++ox) out_row[ox] = plane[row_start + ox * s.stride];
          }
          for (std::int64_t ox = inside.end; ox < ow; ++ox) out_row[ox] = 0.0f;
        }
      }
    }
  });
}

// The adjoint of im2col: adds each column entry back to the input position it came from.
// dx must be zeroed first; overlapping windows add in a fixed order.
void col2im_add(const Conv2dShape& s, const float* cols, float* dx) {
  const std::int64_t oh = s.out_h(), ow = s.out_w();
  detail::parallel_for(s.in_channels_per_group(), s.kernel_h * s.kernel_w * oh * ow, [&](std::int64_t c) {
    float* plane = dx + c * input_plane(s);
    for (int i = 0; i < s.kernel_h; ++i) {
      for (int j = 0; j < s.kernel_w; ++j) {
        const float* in = cols + ((c * s.kernel_h + i) * s.kernel_w + j) * oh * ow;
        const ColumnRange inside = inside_columns(s, j);
        for (std::int64_t oy = 0; oy < oh; ++oy) {
          const std::int64_t iy = oy * s.stride - s.pad_h + i;
          if (iy < 0 || iy >= s.in_h) continue;
          const std::int64_t row_start = iy * s.in_w - s.pad_w + j;
          const float* in_row = in + oy * ow;
          for (std::int64_t ox = inside.begin; ox < inside.end; ++ox) plane[row_start + ox * s.stride] += in_row[ox];
        }
      }
    }
  });
}

// Where group g of image n starts in x, y and the weights.
struct GroupOffsets {
  std::int64_t x, y, weight;
};

GroupOffsets offsets(const Conv2dShape& s, std::int64_t n, std::int64_t g) {
  const std::int64_t cin = s.in_channels_per_group(), cout = s.out_channels_per_group();
  return {(n * s.in_channels + g * cin) * input_plane(s), (n * s.out_channels + g * cout) * positions(s),
          g * cout * patch_size(s)};
}

void check_scratch(const char* kernel, const Conv2dShape& s, std::span<float> scratch) {
  expect_at_least(kernel, "scratch", scratch, conv2d_scratch_elements(s));
}

}  // namespace

std::int64_t conv2d_scratch_elements(const Conv2dShape& s) {
  validate(s);
  return reads_input_directly(s) || is_depthwise(s) ? 0 : patch_size(s) * positions(s);
}

void conv2d_forward(const Conv2dShape& s, std::span<const float> x, std::span<const float> weight,
                    std::span<const float> bias, std::span<float> y, std::span<float> scratch) {
  validate(s);
  expect_size("conv2d_forward", "x", x, s.batch * s.in_channels * input_plane(s));
  expect_size("conv2d_forward", "weight", weight, s.out_channels * patch_size(s));
  expect_size("conv2d_forward", "bias", bias, s.bias ? s.out_channels : 0);
  expect_size("conv2d_forward", "y", y, s.batch * s.out_channels * positions(s));
  check_scratch("conv2d_forward", s, scratch);
  if (is_depthwise(s)) return depthwise_forward(s, x.data(), weight.data(), bias.data(), y.data());
  const std::int64_t k = patch_size(s), p = positions(s), cout = s.out_channels_per_group();
  for (std::int64_t n = 0; n < s.batch; ++n) {
    for (std::int64_t g = 0; g < s.groups; ++g) {
      const GroupOffsets at = offsets(s, n, g);
      const float* cols = x.data() + at.x;
      if (!reads_input_directly(s)) {
        im2col(s, x.data() + at.x, scratch.data());
        cols = scratch.data();
      }
      gemm(false, false, cout, p, k, 1.0f, weight.data() + at.weight, k, cols, p, 0.0f, y.data() + at.y, p);
    }
    if (!s.bias) continue;
    for (std::int64_t c = 0; c < s.out_channels; ++c) {
      float* plane = y.data() + (n * s.out_channels + c) * p;
      for (std::int64_t i = 0; i < p; ++i) plane[i] += bias[c];
    }
  }
}

void conv2d_backward_input(const Conv2dShape& s, std::span<const float> dy, std::span<const float> weight,
                           std::span<float> dx, std::span<float> scratch) {
  validate(s);
  expect_size("conv2d_backward_input", "dy", dy, s.batch * s.out_channels * positions(s));
  expect_size("conv2d_backward_input", "weight", weight, s.out_channels * patch_size(s));
  expect_size("conv2d_backward_input", "dx", dx, s.batch * s.in_channels * input_plane(s));
  check_scratch("conv2d_backward_input", s, scratch);
  if (is_depthwise(s)) return depthwise_backward_input(s, dy.data(), weight.data(), dx.data());
  const std::int64_t k = patch_size(s), p = positions(s), cout = s.out_channels_per_group();
  if (!reads_input_directly(s)) std::fill(dx.begin(), dx.end(), 0.0f);
  for (std::int64_t n = 0; n < s.batch; ++n) {
    for (std::int64_t g = 0; g < s.groups; ++g) {
      const GroupOffsets at = offsets(s, n, g);
      if (reads_input_directly(s)) {
        gemm(true, false, k, p, cout, 1.0f, weight.data() + at.weight, k, dy.data() + at.y, p, 0.0f,
             dx.data() + at.x, p);
        continue;
      }
      gemm(true, false, k, p, cout, 1.0f, weight.data() + at.weight, k, dy.data() + at.y, p, 0.0f, scratch.data(),
           p);
      col2im_add(s, scratch.data(), dx.data() + at.x);
    }
  }
}

void conv2d_backward_params(const Conv2dShape& s, std::span<const float> dy, std::span<const float> x,
                            std::span<float> dweight, std::span<float> dbias, std::span<float> scratch) {
  validate(s);
  expect_size("conv2d_backward_params", "dy", dy, s.batch * s.out_channels * positions(s));
  expect_size("conv2d_backward_params", "x", x, s.batch * s.in_channels * input_plane(s));
  expect_size("conv2d_backward_params", "dweight", dweight, s.out_channels * patch_size(s));
  expect_size("conv2d_backward_params", "dbias", dbias, s.bias ? s.out_channels : 0);
  check_scratch("conv2d_backward_params", s, scratch);
  const std::int64_t k = patch_size(s), p = positions(s), cout = s.out_channels_per_group();
  if (is_depthwise(s)) depthwise_backward_weight(s, dy.data(), x.data(), dweight.data());
  for (std::int64_t n = 0; n < s.batch && !is_depthwise(s); ++n) {
    for (std::int64_t g = 0; g < s.groups; ++g) {
      const GroupOffsets at = offsets(s, n, g);
      const float* cols = x.data() + at.x;
      if (!reads_input_directly(s)) {
        im2col(s, x.data() + at.x, scratch.data());
        cols = scratch.data();
      }
      // The first image overwrites, the others add: no separate zeroing pass.
      gemm(false, true, cout, k, p, 1.0f, dy.data() + at.y, p, cols, p, n == 0 ? 0.0f : 1.0f,
           dweight.data() + at.weight, k);
    }
  }
  if (!s.bias) return;
  std::fill(dbias.begin(), dbias.end(), 0.0f);
  for (std::int64_t n = 0; n < s.batch; ++n) {
    for (std::int64_t c = 0; c < s.out_channels; ++c) {
      const float* plane = dy.data() + (n * s.out_channels + c) * p;
      float sum = 0.0f;
      for (std::int64_t i = 0; i < p; ++i) sum += plane[i];
      dbias[c] += sum;
    }
  }
}

}  // namespace poet::kernels
