// Permutation, slice and prepended tokens: copies in a fixed order (bit-identical runs).
#include "poet/kernels/kernels_layout.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernel_checks.h"

namespace poet::kernels {
namespace {

using detail::expect_size;

std::int64_t elements(const PermuteShape& s) {
  std::int64_t n = 1;
  for (int i = 0; i < s.rank; ++i) n *= s.dims[static_cast<std::size_t>(i)];
  return n;
}

std::int64_t tokens_out(const TokensShape& s) { return s.batch * (s.tokens + s.seq) * s.dim; }

}  // namespace

// Walks y in order with an odometer over its axes; x's offset follows by x's strides.
void permute(const PermuteShape& s, std::span<const float> x, std::span<float> y) {
  validate(s);
  const std::int64_t n = elements(s);
  expect_size("permute", "x", x, n);
  expect_size("permute", "y", y, n);
  const auto r = static_cast<std::size_t>(s.rank);
  std::array<std::int64_t, kMaxPermuteRank> x_stride{}, y_dims{}, stride{}, index{};
  x_stride[r - 1] = 1;
  for (std::size_t i = r - 1; i-- > 0;) x_stride[i] = x_stride[i + 1] * s.dims[i + 1];
  for (std::size_t i = 0; i < r; ++i) {
    const auto p = static_cast<std::size_t>(s.perm[i]);
    y_dims[i] = s.dims[p];
    stride[i] = x_stride[p];  // x's step for a step along y's axis i
  }
  const std::int64_t last = y_dims[r - 1], step = stride[r - 1];
  std::int64_t offset = 0;
  for (std::int64_t out = 0; out < n; out += last) {
    for (std::int64_t j = 0; j < last; ++j) y[static_cast<std::size_t>(out + j)] = x[static_cast<std::size_t>(offset + j * step)];
    for (std::size_t i = r - 1; i-- > 0;) {  // the next row of y: carry through the outer axes
      offset += stride[i];
      if (++index[i] < y_dims[i]) break;
      offset -= stride[i] * y_dims[i];
      index[i] = 0;
    }
  }
}

PermuteShape inverse(const PermuteShape& s) {
  PermuteShape t;
  t.rank = s.rank;
  for (int i = 0; i < s.rank; ++i) {
    const auto p = static_cast<std::size_t>(s.perm[static_cast<std::size_t>(i)]);
    t.dims[static_cast<std::size_t>(i)] = s.dims[p];
    t.perm[p] = i;
  }
  return t;
}

namespace {

// Calls copy(x_offset, y_offset, count) for each run of elements the slice takes: a block
// of the axis at step 1, one row of `inner` elements per taken index otherwise.
template <typename F>
void for_each_slice_run(const SliceShape& s, F copy) {
  const std::int64_t taken = (s.end - s.begin + s.step - 1) / s.step;
  if (s.step == 1) {
    for (std::int64_t o = 0; o < s.outer; ++o)
      copy((o * s.length + s.begin) * s.inner, o * taken * s.inner, taken * s.inner);
    return;
  }
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t k = 0; k < taken; ++k)
      copy((o * s.length + s.begin + k * s.step) * s.inner, (o * taken + k) * s.inner, s.inner);
}

std::int64_t slice_output(const SliceShape& s) { return s.outer * ((s.end - s.begin + s.step - 1) / s.step) * s.inner; }

}  // namespace

void slice_forward(const SliceShape& s, std::span<const float> x, std::span<float> y) {
  validate(s);
  expect_size("slice_forward", "x", x, s.outer * s.length * s.inner);
  expect_size("slice_forward", "y", y, slice_output(s));
  for_each_slice_run(s, [&](std::int64_t from, std::int64_t to, std::int64_t count) {
    std::memcpy(y.data() + to, x.data() + from, static_cast<std::size_t>(count) * sizeof(float));
  });
}

void slice_backward(const SliceShape& s, std::span<const float> dy, std::span<float> dx) {
  validate(s);
  expect_size("slice_backward", "dy", dy, slice_output(s));
  expect_size("slice_backward", "dx", dx, s.outer * s.length * s.inner);
  std::fill(dx.begin(), dx.end(), 0.0f);
  for_each_slice_run(s, [&](std::int64_t from, std::int64_t to, std::int64_t count) {
    std::memcpy(dx.data() + from, dy.data() + to, static_cast<std::size_t>(count) * sizeof(float));
  });
}

namespace {

// The elements of x and of y.
std::pair<std::int64_t, std::int64_t> pad_sizes(const PadShape& s) {
  std::int64_t nx = 1, ny = 1;
  for (std::size_t i = 0; i < static_cast<std::size_t>(s.rank); ++i) {
    nx *= s.dims[i];
    ny *= s.dims[i] + s.begin[i] + s.end[i];
  }
  return {nx, ny};
}

// Calls f(x_offset, y_offset, n) for each row of x along its last axis, in order: the n
// floats of x from x_offset sit in y from y_offset.
template <typename F>
void for_each_pad_row(const PadShape& s, F f) {
  const auto r = static_cast<std::size_t>(s.rank);
  std::array<std::int64_t, kMaxPermuteRank> y_stride{}, index{};
  std::int64_t ny = 1;
  for (std::size_t i = r; i-- > 0;) {
    y_stride[i] = ny;
    ny *= s.dims[i] + s.begin[i] + s.end[i];
  }
  std::int64_t y_offset = 0;
  for (std::size_t i = 0; i < r; ++i) y_offset += s.begin[i] * y_stride[i];
  const std::int64_t row = s.dims[r - 1], nx = pad_sizes(s).first;
  for (std::int64_t x_offset = 0; x_offset < nx; x_offset += row) {
    f(x_offset, y_offset, row);
    for (std::size_t d = r - 1; d-- > 0;) {  // the next row: carry through the outer axes
      y_offset += y_stride[d];
      if (++index[d] < s.dims[d]) break;
      y_offset -= y_stride[d] * s.dims[d];
      index[d] = 0;
    }
  }
}

}  // namespace

void pad_forward(const PadShape& s, std::span<const float> x, std::span<float> y) {
  validate(s);
  const auto [nx, ny] = pad_sizes(s);
  expect_size("pad_forward", "x", x, nx);
  expect_size("pad_forward", "y", y, ny);
  std::fill(y.begin(), y.end(), 0.0f);
  for_each_pad_row(s, [&](std::int64_t from, std::int64_t to, std::int64_t n) {
    std::memcpy(y.data() + to, x.data() + from, static_cast<std::size_t>(n) * sizeof(float));
  });
}

void pad_backward(const PadShape& s, std::span<const float> dy, std::span<float> dx) {
  validate(s);
  const auto [nx, ny] = pad_sizes(s);
  expect_size("pad_backward", "dy", dy, ny);
  expect_size("pad_backward", "dx", dx, nx);
  for_each_pad_row(s, [&](std::int64_t to, std::int64_t from, std::int64_t n) {
    std::memcpy(dx.data() + to, dy.data() + from, static_cast<std::size_t>(n) * sizeof(float));
  });
}

void upsample_nearest_forward(const UpsampleShape& s, std::span<const float> x, std::span<float> y) {
  validate(s);
  const std::int64_t out_h = s.in_h * s.factor_h, out_w = s.in_w * s.factor_w;
  expect_size("upsample_nearest_forward", "x", x, s.planes * s.in_h * s.in_w);
  expect_size("upsample_nearest_forward", "y", y, s.planes * out_h * out_w);
  for (std::int64_t p = 0; p < s.planes; ++p)
    for (std::int64_t h = 0; h < s.in_h; ++h) {
      const float* in = x.data() + (p * s.in_h + h) * s.in_w;
      float* row = y.data() + (p * out_h + h * s.factor_h) * out_w;
      for (std::int64_t w = 0; w < s.in_w; ++w) std::fill_n(row + w * s.factor_w, s.factor_w, in[w]);
      for (std::int64_t r = 1; r < s.factor_h; ++r)  // the block's other rows repeat its first
        std::memcpy(row + r * out_w, row, static_cast<std::size_t>(out_w) * sizeof(float));
    }
}

void upsample_nearest_backward(const UpsampleShape& s, std::span<const float> dy, std::span<float> dx) {
  validate(s);
  const std::int64_t out_h = s.in_h * s.factor_h, out_w = s.in_w * s.factor_w;
  expect_size("upsample_nearest_backward", "dy", dy, s.planes * out_h * out_w);
  expect_size("upsample_nearest_backward", "dx", dx, s.planes * s.in_h * s.in_w);
  for (std::int64_t p = 0; p < s.planes; ++p)
    for (std::int64_t h = 0; h < s.in_h; ++h)
      for (std::int64_t w = 0; w < s.in_w; ++w) {
        const float* block = dy.data() + (p * out_h + h * s.factor_h) * out_w + w * s.factor_w;
        float sum = 0.0f;
        for (std::int64_t r = 0; r < s.factor_h; ++r)
          for (std::int64_t c = 0; c < s.factor_w; ++c) sum += block[r * out_w + c];
        dx[static_cast<std::size_t>((p * s.in_h + h) * s.in_w + w)] = sum;
      }
}

void prepend_tokens_forward(const TokensShape& s, std::span<const float> x, std::span<const float> tokens,
                            std::span<float> y) {
  validate(s);
  expect_size("prepend_tokens_forward", "x", x, s.batch * s.seq * s.dim);
  expect_size("prepend_tokens_forward", "tokens", tokens, s.tokens * s.dim);
  expect_size("prepend_tokens_forward", "y", y, tokens_out(s));
  const std::int64_t head = s.tokens * s.dim, body = s.seq * s.dim;
  for (std::int64_t b = 0; b < s.batch; ++b) {
    float* row = y.data() + b * (head + body);
    std::memcpy(row, tokens.data(), static_cast<std::size_t>(head) * sizeof(float));
    std::memcpy(row + head, x.data() + b * body, static_cast<std::size_t>(body) * sizeof(float));
  }
}

void prepend_tokens_backward_input(const TokensShape& s, std::span<const float> dy, std::span<float> dx) {
  validate(s);
  expect_size("prepend_tokens_backward_input", "dy", dy, tokens_out(s));
  expect_size("prepend_tokens_backward_input", "dx", dx, s.batch * s.seq * s.dim);
  const std::int64_t head = s.tokens * s.dim, body = s.seq * s.dim;
  for (std::int64_t b = 0; b < s.batch; ++b)
    std::memcpy(dx.data() + b * body, dy.data() + b * (head + body) + head, static_cast<std::size_t>(body) * sizeof(float));
}

void prepend_tokens_backward_tokens(const TokensShape& s, std::span<const float> dy, std::span<float> dtokens) {
  validate(s);
  expect_size("prepend_tokens_backward_tokens", "dy", dy, tokens_out(s));
  expect_size("prepend_tokens_backward_tokens", "dtokens", dtokens, s.tokens * s.dim);
  const std::int64_t head = s.tokens * s.dim, body = s.seq * s.dim;
  std::fill(dtokens.begin(), dtokens.end(), 0.0f);
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t i = 0; i < head; ++i) dtokens[static_cast<std::size_t>(i)] += dy[static_cast<std::size_t>(b * (head + body) + i)];
}

}  // namespace poet::kernels
