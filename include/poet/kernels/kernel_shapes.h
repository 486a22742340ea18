// The shapes the fp32 kernels work on: one small struct per operator family.
//
// Layouts are dense and row-major: images are NCHW, weights of a convolution are
// [out_channels, in_channels / groups, kernel_h, kernel_w], weights of a linear layer
// [out_features, in_features]. `validate` throws InputError naming the bad field, since
// shapes come from graphs the user may have written; a span whose size disagrees with a
// valid shape is a bug of the caller (InternalError).
#pragma once

#include <array>
#include <cstdint>

namespace poet::kernels {

// x [rows, in_features] -> y [rows, out_features]; rows folds every leading axis.
struct LinearShape {
  std::int64_t rows = 0;
  std::int64_t in_features = 0;
  std::int64_t out_features = 0;
  bool bias = true;
};

// x [batch, in_channels, in_h, in_w] -> y [batch, out_channels, out_h(), out_w()].
struct Conv2dShape {
  std::int64_t batch = 0;
  std::int64_t in_channels = 0;
  std::int64_t in_h = 0, in_w = 0;
  std::int64_t out_channels = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;  // between windows' rows, columns
  int pad_h = 0, pad_w = 0;
  int groups = 1;  // groups == in_channels == out_channels: depthwise
  bool bias = true;
  int dilation = 1;  // both axes: tap (i, j) reads i dilation rows, j dilation columns from the corner

  // The window's extent: kernel taps spread by the dilation.
  std::int64_t span_h() const { return std::int64_t{dilation} * (kernel_h - 1) + 1; }
  std::int64_t span_w() const { return std::int64_t{dilation} * (kernel_w - 1) + 1; }
  std::int64_t out_h() const { return (in_h + 2 * pad_h - span_h()) / stride_h + 1; }
  std::int64_t out_w() const { return (in_w + 2 * pad_w - span_w()) / stride_w + 1; }
  std::int64_t in_channels_per_group() const { return in_channels / groups; }
  std::int64_t out_channels_per_group() const { return out_channels / groups; }
};

// Max and average pooling, x [batch, channels, in_h, in_w]. Average pooling divides by
// the full window, padding included.
// Positions of a pooling window over `in` padded by `pad` on both sides; with `ceil`, as
// PyTorch's ceil_mode (rounded up, less a last window starting beyond the leading padding
// and the image).
constexpr std::int64_t pool_positions(std::int64_t in, int kernel, int stride, int pad, bool ceil) {
  const std::int64_t span = in + 2 * pad - kernel;
  std::int64_t out = (ceil ? span + stride - 1 : span) / stride + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

struct Pool2dShape {
  std::int64_t batch = 0;
  std::int64_t channels = 0;
  std::int64_t in_h = 0, in_w = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  // The output size rounds up, as PyTorch's ceil_mode: a last window that starts inside
  // the image (or its leading padding) and overhangs its end, clipped to the image.
  bool ceil_mode = false;

  std::int64_t out_h() const { return pool_positions(in_h, kernel_h, stride_h, pad_h, ceil_mode); }
  std::int64_t out_w() const { return pool_positions(in_w, kernel_w, stride_w, pad_w, ceil_mode); }
};

// Batch norm over x [batch, channels, spatial]: statistics per channel.
struct BatchNormShape {
  std::int64_t batch = 0;
  std::int64_t channels = 0;
  std::int64_t spatial = 1;  // height x width
  float eps = 1e-5f;
};

// Layer norm over x [rows, features]: statistics per row, scale and shift per feature.
struct LayerNormShape {
  std::int64_t rows = 0;
  std::int64_t features = 0;
  float eps = 1e-5f;
};

// x [batch, channels, spatial], normalized over each sample's `groups` runs of
// channels / groups channels (contiguous: a group is a row of (channels / groups) spatial
// elements).
struct GroupNormShape {
  std::int64_t batch = 0, channels = 0, spatial = 0, groups = 1;
  float eps = 1e-5f;
  std::int64_t group_elements() const { return channels / groups * spatial; }
};

// Softmax and the softmax cross-entropy loss over the last axis of [rows, cols].
struct RowsShape {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

// Batched C = alpha x A x B, or alpha x A x B^T when transpose_b.
// A [batch, m, k]; B [batch, k, n], or [batch, n, k] when transpose_b; C [batch, m, n].
struct MatMulShape {
  std::int64_t batch = 1;
  std::int64_t m = 0, k = 0, n = 0;
  bool transpose_b = false;
  float alpha = 1.0f;  // attention scores use 1 / sqrt(head_dim)
};

// [batch, seq, heads x head_dim] <-> [batch, heads, seq, head_dim].
struct HeadsShape {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
};

// token ids [tokens] and a table [vocab, dim] -> [tokens, dim].
struct EmbeddingShape {
  std::int64_t tokens = 0;
  std::int64_t vocab = 0;
  std::int64_t dim = 0;
};

// A permutation of the axes of x (rank <= kMaxPermuteRank): y's axis i is x's axis perm[i].
inline constexpr int kMaxPermuteRank = 8;
struct PermuteShape {
  int rank = 0;
  std::array<std::int64_t, kMaxPermuteRank> dims = {};  // x's
  std::array<int, kMaxPermuteRank> perm = {};
};

// x viewed as [outer, length, inner] -> y [outer, end - begin, inner]: a block of one axis.
struct SliceShape {
  std::int64_t outer = 1, length = 0, inner = 1;
  std::int64_t begin = 0, end = 0;
  std::int64_t step = 1;  // every step-th of [begin, end) (Swin's patch merging: 2)
};

// x [batch, seq, dim] and tokens [tokens, dim] -> y [batch, tokens + seq, dim].
struct TokensShape {
  std::int64_t batch = 0, tokens = 0, seq = 0, dim = 0;
};

// a [dims] times b [b_dims], b of a's rank with b_dims[i] equal to dims[i] or 1.
struct BroadcastShape {
  int rank = 0;
  std::array<std::int64_t, kMaxPermuteRank> dims = {}, b_dims = {};
};

// x [dims] -> y with begin[i] zeros before and end[i] after along each axis i.
struct PadShape {
  int rank = 0;
  std::array<std::int64_t, kMaxPermuteRank> dims = {}, begin = {}, end = {};
};

// x [planes, in_h, in_w] -> y [planes, in_h factor_h, in_w factor_w] (planes: batch x channels).
struct UpsampleShape {
  std::int64_t planes = 0, in_h = 0, in_w = 0;
  std::int64_t factor_h = 1, factor_w = 1;
};

void validate(const LinearShape& s);
void validate(const Conv2dShape& s);
void validate(const Pool2dShape& s);
void validate(const BatchNormShape& s);
void validate(const LayerNormShape& s);
void validate(const GroupNormShape& s);
void validate(const RowsShape& s);
void validate(const MatMulShape& s);
void validate(const HeadsShape& s);
void validate(const EmbeddingShape& s);
void validate(const PermuteShape& s);
void validate(const SliceShape& s);
void validate(const TokensShape& s);
void validate(const BroadcastShape& s);
void validate(const PadShape& s);
void validate(const UpsampleShape& s);

}  // namespace poet::kernels
