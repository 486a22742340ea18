// Max, average and global average pooling.
#include "poet/kernels/kernels_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "kernel_checks.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

using detail::expect_size;

// The part of a window inside the image: rows [y0, y1), columns [x0, x1); and its corner
// counting the padding (top, left), where a position within the window counts from.
struct Window {
  std::int64_t y0, y1, x0, x1;
  std::int64_t top, left;
};

Window window_at(const Pool2dShape& s, std::int64_t oy, std::int64_t ox) {
  const std::int64_t top = oy * s.stride - s.pad_h, left = ox * s.stride - s.pad_w;
  return {std::max<std::int64_t>(top, 0), std::min<std::int64_t>(top + s.kernel_h, s.in_h),
          std::max<std::int64_t>(left, 0), std::min<std::int64_t>(left + s.kernel_w, s.in_w), top, left};
}

// Index in the plane of the window's first maximum in row-major order. validate() keeps
// padding narrower than the kernel, so every window holds at least one real element.
// Written with selects, not a branch: which element wins is data-dependent, and a branch
// on it is mispredicted about as often as not (measured: the branch made max-pooling 5% of
// a resnet18 training step).
std::int64_t argmax(const Pool2dShape& s, const float* plane, const Window& w) {
  std::int64_t best = w.y0 * s.in_w + w.x0;
  float best_value = plane[best];
  for (std::int64_t iy = w.y0; iy < w.y1; ++iy)
    for (std::int64_t ix = w.x0; ix < w.x1; ++ix) {
      const std::int64_t at = iy * s.in_w + ix;
      const bool better = plane[at] > best_value;
      best = better ? at : best;
      best_value = better ? plane[at] : best_value;
    }
  return best;
}

void check_pool(const char* kernel, const Pool2dShape& s, std::span<const float> in, std::span<const float> out) {
  validate(s);
  expect_size(kernel, "input-side tensor", in, s.batch * s.channels * s.in_h * s.in_w);
  expect_size(kernel, "output-side tensor", out, s.batch * s.channels * s.out_h() * s.out_w());
}

// Calls visit(plane index, window, output index) for every output element.
template <typename Visit>
void for_each_window(const Pool2dShape& s, Visit visit) {
  const std::int64_t oh = s.out_h(), ow = s.out_w();
  for (std::int64_t plane = 0; plane < s.batch * s.channels; ++plane)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox) visit(plane, window_at(s, oy, ox), (plane * oh + oy) * ow + ox);
}

}  // namespace

void max_pool2d_forward(const Pool2dShape& s, std::span<const float> x, std::span<float> y) {
  check_pool("max_pool2d_forward", s, x, y);
  const std::int64_t area = s.in_h * s.in_w;
  // The maximum itself, not the argmax's element: the same value (std::max keeps the first
  // of equals, and NaNs, as argmax does), taken with maxss where argmax's selects had become
  // branches once the code around changed (lenet5: the forward pool 4% -> 16% of a step).
  for_each_window(s, [&](std::int64_t plane, const Window& w, std::int64_t out) {
    const float* p = x.data() + plane * area;
    float most = p[w.y0 * s.in_w + w.x0];
    for (std::int64_t iy = w.y0; iy < w.y1; ++iy)
      for (std::int64_t ix = w.x0; ix < w.x1; ++ix) most = std::max(most, p[iy * s.in_w + ix]);
    y[out] = most;
  });
}

namespace {

template <typename Index>
void check_index_type(const char* kernel, const Pool2dShape& s) {
  if (std::int64_t{s.kernel_h} * s.kernel_w - 1 > std::int64_t{std::numeric_limits<Index>::max()})
    throw InputError(fmt::format("{}: {}x{} windows have more positions than a {}-byte index holds", kernel,
                                 s.kernel_h, s.kernel_w, sizeof(Index)));
}

}  // namespace

template <typename Index>
void max_pool2d_indices(const Pool2dShape& s, std::span<const float> x, std::span<Index> indices) {
  validate(s);
  expect_size("max_pool2d_indices", "x", x, s.batch * s.channels * s.in_h * s.in_w);
  expect_size("max_pool2d_indices", "indices", indices, s.batch * s.channels * s.out_h() * s.out_w());
  check_index_type<Index>("max_pool2d_indices", s);
  const std::int64_t area = s.in_h * s.in_w;
  for_each_window(s, [&](std::int64_t plane, const Window& w, std::int64_t out) {
    const std::int64_t at = argmax(s, x.data() + plane * area, w), row = at / s.in_w;
    indices[static_cast<std::size_t>(out)] =
        static_cast<Index>((row - w.top) * s.kernel_w + (at - row * s.in_w - w.left));
  });
}

template <typename Index>
void max_pool2d_backward(const Pool2dShape& s, std::span<const float> dy, std::span<const Index> indices,
                         std::span<float> dx) {
  check_pool("max_pool2d_backward", s, dx, dy);
  expect_size("max_pool2d_backward", "indices", indices, static_cast<std::int64_t>(dy.size()));
  check_index_type<Index>("max_pool2d_backward", s);
  std::fill(dx.begin(), dx.end(), 0.0f);
  const std::int64_t area = s.in_h * s.in_w;
  for_each_window(s, [&](std::int64_t plane, const Window& w, std::int64_t out) {
    const std::int64_t k = indices[static_cast<std::size_t>(out)], row = k / s.kernel_w;
    dx[plane * area + (w.top + row) * s.in_w + w.left + k - row * s.kernel_w] += dy[out];
  });
}

template void max_pool2d_indices(const Pool2dShape&, std::span<const float>, std::span<std::uint8_t>);
template void max_pool2d_indices(const Pool2dShape&, std::span<const float>, std::span<std::uint16_t>);
template void max_pool2d_indices(const Pool2dShape&, std::span<const float>, std::span<std::uint32_t>);
template void max_pool2d_backward(const Pool2dShape&, std::span<const float>, std::span<const std::uint8_t>,
                                  std::span<float>);
template void max_pool2d_backward(const Pool2dShape&, std::span<const float>, std::span<const std::uint16_t>,
                                  std::span<float>);
template void max_pool2d_backward(const Pool2dShape&, std::span<const float>, std::span<const std::uint32_t>,
                                  std::span<float>);

namespace {

// Every window divides by the kernel's area: a partial window of ceil_mode would not.
void check_avg_pool(const char* kernel, const Pool2dShape& s, std::span<const float> in, std::span<const float> out) {
  if (s.ceil_mode) throw InputError(fmt::format("{}: average pooling rounds its output size down (no ceil_mode)", kernel));
  check_pool(kernel, s, in, out);
}

}  // namespace

void avg_pool2d_forward(const Pool2dShape& s, std::span<const float> x, std::span<float> y) {
  check_avg_pool("avg_pool2d_forward", s, x, y);
  const std::int64_t area = s.in_h * s.in_w;
  const float scale = 1.0f / static_cast<float>(s.kernel_h * s.kernel_w);
  for_each_window(s, [&](std::int64_t plane, const Window& w, std::int64_t out) {
    const float* p = x.data() + plane * area;
    float sum = 0.0f;
    for (std::int64_t iy = w.y0; iy < w.y1; ++iy)
      for (std::int64_t ix = w.x0; ix < w.x1; ++ix) sum += p[iy * s.in_w + ix];
    y[out] = sum * scale;
  });
}

void avg_pool2d_backward(const Pool2dShape& s, std::span<const float> dy, std::span<float> dx) {
  check_avg_pool("avg_pool2d_backward", s, dx, dy);
  std::fill(dx.begin(), dx.end(), 0.0f);
  const std::int64_t area = s.in_h * s.in_w;
  const float scale = 1.0f / static_cast<float>(s.kernel_h * s.kernel_w);
  for_each_window(s, [&](std::int64_t plane, const Window& w, std::int64_t out) {
    float* p = dx.data() + plane * area;
    const float share = dy[out] * scale;
    for (std::int64_t iy = w.y0; iy < w.y1; ++iy)
      for (std::int64_t ix = w.x0; ix < w.x1; ++ix) p[iy * s.in_w + ix] += share;
  });
}

namespace {

void check_global(const char* kernel, std::int64_t batch, std::int64_t channels, std::int64_t spatial,
                  std::span<const float> in, std::span<const float> out) {
  if (batch <= 0 || channels <= 0 || spatial <= 0)
    throw InputError("global_avg_pool: batch, channels and spatial size must be positive");
  expect_size(kernel, "input-side tensor", in, batch * channels * spatial);
  expect_size(kernel, "output-side tensor", out, batch * channels);
}

}  // namespace

void global_avg_pool_forward(std::int64_t batch, std::int64_t channels, std::int64_t spatial,
                             std::span<const float> x, std::span<float> y) {
  check_global("global_avg_pool_forward", batch, channels, spatial, x, y);
  for (std::int64_t plane = 0; plane < batch * channels; ++plane) {
    const float* p = x.data() + plane * spatial;
    double sum = 0.0;
    for (std::int64_t i = 0; i < spatial; ++i) sum += p[i];
    y[plane] = static_cast<float>(sum / static_cast<double>(spatial));
  }
}

void global_avg_pool_backward(std::int64_t batch, std::int64_t channels, std::int64_t spatial,
                              std::span<const float> dy, std::span<float> dx) {
  check_global("global_avg_pool_backward", batch, channels, spatial, dx, dy);
  const float scale = 1.0f / static_cast<float>(spatial);
  for (std::int64_t plane = 0; plane < batch * channels; ++plane) {
    const float share = dy[plane] * scale;
    std::fill(dx.begin() + plane * spatial, dx.begin() + (plane + 1) * spatial, share);
  }
}

}  // namespace poet::kernels
