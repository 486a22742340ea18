// Max, average and global average pooling.
#include "poet/kernels/kernels_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "kernel_checks.h"
#include "parallel_for.h"
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
  const std::int64_t top = oy * s.stride_h - s.pad_h, left = ox * s.stride_w - s.pad_w;
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

// Max pooling one output row at a time: the windows cut by the image's left or right edge
// one by one, and the columns between them (`interior_columns`) together, one window
// position (row iy, column j) at a time over all of them, in the window's row-major order.
// Each output then meets its window's elements in the same order as one window at a time, so
// the results are the same bits; the loop over columns runs without per-window bounds, and
// the planes go to the threads (resnet18, batch 4, one thread: the forward pool and its
// indices 4.5% of a step's perf samples before, 2.2% after; docs/BENCHMARKS.md).
struct Columns {
  std::int64_t begin, end;
};

Columns interior_columns(const Pool2dShape& s) {
  const std::int64_t ow = s.out_w();
  // left = ox stride_w - pad_w >= 0, and left + kernel_w <= in_w.
  const std::int64_t begin = std::min(ow, (std::int64_t{s.pad_w} + s.stride_w - 1) / s.stride_w);
  const std::int64_t last_start = s.in_w - s.kernel_w + s.pad_w;  // the largest ox stride_w inside
  const std::int64_t end = last_start < 0 ? begin : std::clamp(last_start / s.stride_w + 1, begin, ow);
  return {begin, end};
}

// Every output row of every plane (the planes on the threads): out[ox] = edge(plane's
// input, window) for each column whose window the image's edge cuts, and interior(plane's
// input, window of the row's first interior column, row's output) once for the rest.
template <typename T, typename Edge, typename Interior>
void by_rows(const Pool2dShape& s, const float* x, T* y, Edge edge, Interior interior) {
  const std::int64_t area = s.in_h * s.in_w, oh = s.out_h(), ow = s.out_w();
  const Columns inside = interior_columns(s);
  detail::parallel_for(s.batch * s.channels, oh * ow * s.kernel_h * s.kernel_w, [&](std::int64_t plane) {
    const float* p = x + plane * area;
    for (std::int64_t oy = 0; oy < oh; ++oy) {
      T* out = y + (plane * oh + oy) * ow;
      for (std::int64_t ox = 0; ox < inside.begin; ++ox) out[ox] = edge(p, window_at(s, oy, ox));
      if (inside.begin < inside.end) interior(p, window_at(s, oy, inside.begin), inside, out);
      for (std::int64_t ox = inside.end; ox < ow; ++ox) out[ox] = edge(p, window_at(s, oy, ox));
    }
  });
}

// Where, in its plane, the first element of interior column `column`'s window lies (row w).
std::int64_t window_start(const Pool2dShape& s, const Window& w, std::int64_t column) {
  return w.y0 * s.in_w - s.pad_w + column * s.stride_w;
}

// out[c] = the maximum of the window of interior column begin + c, for c in [0, columns),
// in row w's windows: each window's elements in row-major order, from the first, with
// std::max.
void interior_maxima(const Pool2dShape& s, const float* p, const Window& w, std::int64_t begin,
                     std::int64_t columns, float* out) {
  const std::int64_t start = window_start(s, w, begin);
  for (std::int64_t c = 0; c < columns; ++c) out[c] = p[start + c * s.stride_w];
  for (std::int64_t iy = w.y0; iy < w.y1; ++iy)
    for (std::int64_t j = iy == w.y0 ? 1 : 0; j < s.kernel_w; ++j) {
      const std::int64_t row = start + (iy - w.y0) * s.in_w + j;
      for (std::int64_t c = 0; c < columns; ++c) out[c] = std::max(out[c], p[row + c * s.stride_w]);
    }
}

}  // namespace

void max_pool2d_forward(const Pool2dShape& s, std::span<const float> x, std::span<float> y) {
  check_pool("max_pool2d_forward", s, x, y);
  // The maximum itself, not the argmax's element: the same value (std::max keeps the first
  // of equals, and NaNs, as argmax does), taken with maxss where argmax's selects had become
  // branches once the code around changed (lenet5: the forward pool 4% -> 16% of a step).
  by_rows(
      s, x.data(), y.data(),
      [&](const float* p, const Window& w) {
        float most = p[w.y0 * s.in_w + w.x0];
        for (std::int64_t iy = w.y0; iy < w.y1; ++iy)
          for (std::int64_t ix = w.x0; ix < w.x1; ++ix) most = std::max(most, p[iy * s.in_w + ix]);
        return most;
      },
      [&](const float* p, const Window& w, const Columns& inside, float* out) {
        interior_maxima(s, p, w, inside.begin, inside.end - inside.begin, out + inside.begin);
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
  // The interior columns a block at a time, in two passes that vectorize: each window's
  // maximum as max_pool2d_forward takes it, then the first position holding a value equal
  // to it, found by going through the positions from the last to the first. That is
  // argmax's position: the maximum is the first of the equal largest values (NaNs count
  // only in the window's first place, where the maximum is then NaN, which equals nothing,
  // so the first place stays). One pass with argmax's selects of a value and a position
  // per column did not vectorize and took 2.4x the time of the one-window-at-a-time loop.
  constexpr std::int64_t kBlock = 256;
  by_rows(
      s, x.data(), indices.data(),
      [&](const float* p, const Window& w) {
        const std::int64_t at = argmax(s, p, w), row = at / s.in_w;
        return static_cast<Index>((row - w.top) * s.kernel_w + (at - row * s.in_w - w.left));
      },
      [&](const float* p, const Window& w, const Columns& inside, Index* out) {
        float most[kBlock];
        std::int32_t first[kBlock];
        for (std::int64_t begin = inside.begin; begin < inside.end; begin += kBlock) {
          const std::int64_t columns = std::min(inside.end - begin, kBlock);
          interior_maxima(s, p, w, begin, columns, most);
          const float* start = p + window_start(s, w, begin);
          const auto first_position = static_cast<std::int32_t>((w.y0 - w.top) * s.kernel_w);
          for (std::int64_t c = 0; c < columns; ++c) first[c] = first_position;
          for (std::int64_t iy = w.y1 - 1; iy >= w.y0; --iy)
            for (std::int64_t j = s.kernel_w - 1; j >= 0; --j) {
              const float* at = start + ((iy - w.y0) * s.in_w + j);
              const auto position = static_cast<std::int32_t>((iy - w.top) * s.kernel_w + j);
              for (std::int64_t c = 0; c < columns; ++c) first[c] = at[c * s.stride_w] == most[c] ? position : first[c];
            }
          for (std::int64_t c = 0; c < columns; ++c) out[begin + c] = static_cast<Index>(first[c]);
        }
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
