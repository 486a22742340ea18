#include "poet/kernels/kernel_shapes.h"

#include <fmt/format.h>

#include "poet/util/error.h"

namespace poet::kernels {
namespace {

void positive(const char* shape, const char* field, std::int64_t value) {
  if (value <= 0) throw InputError(fmt::format("{}: {} must be positive, not {}", shape, field, value));
}

void non_negative(const char* shape, const char* field, std::int64_t value) {
  if (value < 0) throw InputError(fmt::format("{}: {} must not be negative, not {}", shape, field, value));
}

// The kernel must fit the padded input at least once.
void window_fits(const char* shape, std::int64_t in_h, std::int64_t in_w, std::int64_t kernel_h, std::int64_t kernel_w,
                 int stride_h, int stride_w, int pad_h, int pad_w) {
  positive(shape, "kernel_h", kernel_h);
  positive(shape, "kernel_w", kernel_w);
  positive(shape, "stride_h", stride_h);
  positive(shape, "stride_w", stride_w);
  non_negative(shape, "pad_h", pad_h);
  non_negative(shape, "pad_w", pad_w);
  if (in_h + 2 * pad_h < kernel_h || in_w + 2 * pad_w < kernel_w)
    throw InputError(fmt::format("{}: a {}x{} kernel does not fit a {}x{} input padded by {}x{}", shape, kernel_h,
                                 kernel_w, in_h, in_w, pad_h, pad_w));
}

void finite_positive_eps(const char* shape, float eps) {
  if (!(eps > 0.0f)) throw InputError(fmt::format("{}: eps must be positive, not {}", shape, eps));
}

}  // namespace

void validate(const LinearShape& s) {
  positive("linear", "rows", s.rows);
  positive("linear", "in_features", s.in_features);
  positive("linear", "out_features", s.out_features);
}

void validate(const Conv2dShape& s) {
  positive("conv2d", "batch", s.batch);
  positive("conv2d", "in_channels", s.in_channels);
  positive("conv2d", "in_h", s.in_h);
  positive("conv2d", "in_w", s.in_w);
  positive("conv2d", "out_channels", s.out_channels);
  positive("conv2d", "groups", s.groups);
  if (s.in_channels % s.groups != 0 || s.out_channels % s.groups != 0)
    throw InputError(fmt::format("conv2d: groups {} must divide both in_channels {} and out_channels {}", s.groups,
                                 s.in_channels, s.out_channels));
  positive("conv2d", "dilation", s.dilation);
  if (s.dilation > (1 << 20)) throw InputError(fmt::format("conv2d: dilation {} is beyond any image", s.dilation));
  window_fits("conv2d", s.in_h, s.in_w, s.span_h(), s.span_w(), s.stride_h, s.stride_w, s.pad_h, s.pad_w);
}

void validate(const Pool2dShape& s) {
  positive("pool2d", "batch", s.batch);
  positive("pool2d", "channels", s.channels);
  positive("pool2d", "in_h", s.in_h);
  positive("pool2d", "in_w", s.in_w);
  window_fits("pool2d", s.in_h, s.in_w, s.kernel_h, s.kernel_w, s.stride_h, s.stride_w, s.pad_h, s.pad_w);
  // Padding as wide as the kernel would make windows of nothing but padding, with no max.
  if (s.pad_h >= s.kernel_h || s.pad_w >= s.kernel_w)
    throw InputError(fmt::format("pool2d: padding {}x{} must be smaller than the {}x{} kernel", s.pad_h, s.pad_w,
                                 s.kernel_h, s.kernel_w));
}

void validate(const BatchNormShape& s) {
  positive("batch_norm", "batch", s.batch);
  positive("batch_norm", "channels", s.channels);
  positive("batch_norm", "spatial", s.spatial);
  finite_positive_eps("batch_norm", s.eps);
}

void validate(const LayerNormShape& s) {
  positive("layer_norm", "rows", s.rows);
  positive("layer_norm", "features", s.features);
  finite_positive_eps("layer_norm", s.eps);
}

void validate(const GroupNormShape& s) {
  positive("group_norm", "batch", s.batch);
  positive("group_norm", "channels", s.channels);
  positive("group_norm", "spatial", s.spatial);
  positive("group_norm", "groups", s.groups);
  if (s.channels % s.groups != 0)
    throw InputError(fmt::format("group_norm: {} groups do not divide {} channels", s.groups, s.channels));
  finite_positive_eps("group_norm", s.eps);
}

void validate(const RowsShape& s) {
  positive("softmax", "rows", s.rows);
  positive("softmax", "cols", s.cols);
}

void validate(const MatMulShape& s) {
  positive("matmul", "batch", s.batch);
  positive("matmul", "m", s.m);
  positive("matmul", "k", s.k);
  positive("matmul", "n", s.n);
}

void validate(const HeadsShape& s) {
  positive("heads", "batch", s.batch);
  positive("heads", "seq", s.seq);
  positive("heads", "heads", s.heads);
  positive("heads", "head_dim", s.head_dim);
}

void validate(const EmbeddingShape& s) {
  positive("embedding", "tokens", s.tokens);
  positive("embedding", "vocab", s.vocab);
  positive("embedding", "dim", s.dim);
}

void validate(const PermuteShape& s) {
  if (s.rank < 1 || s.rank > kMaxPermuteRank)
    throw InputError(fmt::format("permute: rank {} is outside 1 to {}", s.rank, kMaxPermuteRank));
  std::array<bool, kMaxPermuteRank> seen = {};
  for (int i = 0; i < s.rank; ++i) {
    positive("permute", "dimension", s.dims[static_cast<std::size_t>(i)]);
    const int p = s.perm[static_cast<std::size_t>(i)];
    if (p < 0 || p >= s.rank || seen[static_cast<std::size_t>(p)])
      throw InputError(fmt::format("permute: axis {} appears twice or is outside rank {}", p, s.rank));
    seen[static_cast<std::size_t>(p)] = true;
  }
}

void validate(const SliceShape& s) {
  positive("slice", "outer", s.outer);
  positive("slice", "inner", s.inner);
  if (!(0 <= s.begin && s.begin < s.end && s.end <= s.length))
    throw InputError(fmt::format("slice: [{}, {}) is not a block of an axis of {}", s.begin, s.end, s.length));
  positive("slice", "step", s.step);
}

void validate(const BroadcastShape& s) {
  if (s.rank < 1 || s.rank > kMaxPermuteRank)
    throw InputError(fmt::format("mul: rank {} is outside 1 to {}", s.rank, kMaxPermuteRank));
  for (std::size_t i = 0; i < static_cast<std::size_t>(s.rank); ++i) {
    positive("mul", "dimension", s.dims[i]);
    if (s.b_dims[i] != s.dims[i] && s.b_dims[i] != 1)
      throw InputError(fmt::format("mul: axis {} of b has size {}, neither 1 nor a's {}", i, s.b_dims[i], s.dims[i]));
  }
}

void validate(const PadShape& s) {
  if (s.rank < 1 || s.rank > kMaxPermuteRank)
    throw InputError(fmt::format("pad: rank {} is outside 1 to {}", s.rank, kMaxPermuteRank));
  for (std::size_t i = 0; i < static_cast<std::size_t>(s.rank); ++i) {
    positive("pad", "dimension", s.dims[i]);
    non_negative("pad", "begin", s.begin[i]);
    non_negative("pad", "end", s.end[i]);
  }
}

void validate(const UpsampleShape& s) {
  positive("upsample_nearest", "planes", s.planes);
  positive("upsample_nearest", "in_h", s.in_h);
  positive("upsample_nearest", "in_w", s.in_w);
  positive("upsample_nearest", "factor_h", s.factor_h);
  positive("upsample_nearest", "factor_w", s.factor_w);
}

void validate(const TokensShape& s) {
  positive("prepend_tokens", "batch", s.batch);
  positive("prepend_tokens", "tokens", s.tokens);
  positive("prepend_tokens", "seq", s.seq);
  positive("prepend_tokens", "dim", s.dim);
}

}  // namespace poet::kernels
