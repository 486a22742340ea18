// The kernels of the operators ONNX files bring: permutation, slice, prepended tokens, the
// learned addition, scale, the exact GELU, hard sigmoid and swish, and the broadcast
// multiply and divide, each gradient held to finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_activation.h"
#include "poet/kernels/kernels_layout.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

using testing::away_from_zero;
using testing::gradient_matches;
using testing::random_values;


PermuteShape permutation(std::vector<std::int64_t> dims, std::vector<int> perm) {
  PermuteShape s;
  s.rank = static_cast<int>(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    s.dims[i] = dims[i];
    s.perm[i] = perm[i];
  }
  return s;
}

TEST(KernelPermute, MovesEachElementWhereItsAxesSay) {
  // x [2, 3]: y = x^T [3, 2].
  const std::vector<float> x{0, 1, 2, 3, 4, 5};
  std::vector<float> y(6);
  permute(permutation({2, 3}, {1, 0}), x, y);
  EXPECT_EQ(y, (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // x [2, 3, 4] by [1, 2, 0] (attention's key transpose): y[j][k][i] = x[i][j][k].
  const PermuteShape s = permutation({2, 3, 4}, {1, 2, 0});
  const std::vector<float> x3 = random_values(24, 1);
  std::vector<float> y3(24), back(24);
  permute(s, x3, y3);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(y3[static_cast<std::size_t>((j * 4 + k) * 2 + i)], x3[static_cast<std::size_t>((i * 3 + j) * 4 + k)]);
  permute(inverse(s), y3, back);
  EXPECT_EQ(back, x3);
}

TEST(KernelPermute, GradientMatchesFiniteDifferences) {
  const PermuteShape s = permutation({2, 3, 2, 2}, {2, 0, 3, 1});
  const std::vector<float> x = random_values(24, 2), dy = random_values(24, 3);
  std::vector<float> dx(24);
  permute(inverse(s), dy, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { permute(s, in, out); }, x, 24, dy, dx));
}

TEST(KernelSlice, GradientMatchesFiniteDifferencesAndIsZeroOutsideTheBlock) {
  const SliceShape s{.outer = 2, .length = 5, .inner = 3, .begin = 1, .end = 3};
  const std::vector<float> x = random_values(30, 4), dy = random_values(12, 5);
  std::vector<float> y(12), dx(30);
  slice_forward(s, x, y);
  EXPECT_EQ(y[0], x[3]);     // outer 0, index 1, inner 0
  EXPECT_EQ(y[6], x[15 + 3]);  // outer 1, index 1, inner 0
  slice_backward(s, dy, dx);
  EXPECT_EQ(dx[0], 0.0f);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { slice_forward(s, in, out); }, x, 12, dy, dx));
}

// Swin's patch merging, x[:, 0::2]: every second index of [1, 5), and the gradient puts dY
// back at those indices, zeros between.
TEST(KernelSlice, WithAStepTakesEverySecondAndItsGradientMatches) {
  const SliceShape s{.outer = 2, .length = 5, .inner = 3, .begin = 1, .end = 5, .step = 2};  // indices 1 and 3
  const std::vector<float> x = random_values(30, 40), dy = random_values(12, 41);
  std::vector<float> y(12), dx(30);
  slice_forward(s, x, y);
  EXPECT_EQ(y[0], x[3]);            // outer 0, index 1
  EXPECT_EQ(y[3], x[9]);            // outer 0, index 3
  EXPECT_EQ(y[6 + 4], x[15 + 9 + 1]);  // outer 1, index 3, inner 1
  slice_backward(s, dy, dx);
  EXPECT_EQ(dx[6], 0.0f);  // index 2 is skipped
  EXPECT_EQ(dx[12], 0.0f);  // index 4 too
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { slice_forward(s, in, out); }, x, 12, dy, dx));
}

TEST(KernelPrependTokens, BothGradientsMatchFiniteDifferences) {
  const TokensShape s{.batch = 2, .tokens = 1, .seq = 3, .dim = 2};
  const std::vector<float> x = random_values(12, 6), tokens = random_values(2, 7), dy = random_values(16, 8);
  std::vector<float> y(16), dx(12), dtokens(2);
  prepend_tokens_forward(s, x, tokens, y);
  EXPECT_EQ(y[8], tokens[0]);  // sample 1 starts with the token
  EXPECT_EQ(y[10], x[6]);
  prepend_tokens_backward_input(s, dy, dx);
  prepend_tokens_backward_tokens(s, dy, dtokens);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { prepend_tokens_forward(s, in, tokens, out); }, x, 16, dy, dx));
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { prepend_tokens_forward(s, x, in, out); }, tokens, 16, dy,
                               dtokens));
}

TEST(KernelAddParameter, ParameterGradientMatchesFiniteDifferences) {
  const std::vector<float> x = random_values(12, 9), p = random_values(4, 10), dy = random_values(12, 11);
  std::vector<float> y(12), dp(4);
  add_parameter_forward(x, p, y);
  EXPECT_FLOAT_EQ(y[9], x[9] + p[1]);
  add_parameter_backward(dy, dp);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { add_parameter_forward(x, in, out); }, p, 12, dy, dp));
}

TEST(KernelScale, GradientIsTheSameScale) {
  const std::vector<float> x = random_values(10, 12), dy = random_values(10, 13);
  std::vector<float> dx(10);
  scale_forward(-0.25f, dy, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { scale_forward(-0.25f, in, out); }, x, 10, dy, dx));
  // A shift adds a constant: the same gradient.
  EXPECT_TRUE(
      gradient_matches([&](auto in, auto out) { scale_shift_forward(-0.25f, 0.5f, in, out); }, x, 10, dy, dx));
  std::vector<float> y(10);
  scale_shift_forward(-0.25f, 0.5f, x, y);
  EXPECT_FLOAT_EQ(y[3], -0.25f * x[3] + 0.5f);
}

TEST(KernelGeluErf, ValuesAndGradientMatch) {
  std::vector<float> y(3);
  gelu_erf_forward(std::vector<float>{-1.0f, 0.0f, 1.0f}, y);
  EXPECT_NEAR(y[2], 0.8413447f, 1e-6f);  // Phi(1)
  EXPECT_NEAR(y[0], -0.1586553f, 1e-6f);
  EXPECT_EQ(y[1], 0.0f);
  const std::vector<float> x = random_values(30, 14, -4.0f, 4.0f), dy = random_values(30, 15);
  std::vector<float> dx(30);
  gelu_erf_backward(dy, x, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { gelu_erf_forward(in, out); }, x, 30, dy, dx, 1e-3f));
}

TEST(KernelPad, ZerosAroundAndGradientMatches) {
  // x [2, 3] padded by one row before and two columns after: y [3, 5].
  PadShape s;
  s.rank = 2;
  s.dims = {2, 3};
  s.begin = {1, 0};
  s.end = {0, 2};
  const std::vector<float> x{1, 2, 3, 4, 5, 6};
  std::vector<float> y(15);
  pad_forward(s, x, y);
  EXPECT_EQ(y, (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0}));
  PadShape image;  // [1, 2, 3, 3], one pixel around
  image.rank = 4;
  image.dims = {1, 2, 3, 3};
  image.begin = {0, 0, 1, 1};
  image.end = {0, 0, 1, 1};
  const std::vector<float> xi = random_values(18, 21), dy = random_values(50, 22);
  std::vector<float> dx(18);
  pad_backward(image, dy, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { pad_forward(image, in, out); }, xi, 50, dy, dx));
}

TEST(KernelUpsampleNearest, BlocksOfCopiesAndGradientMatches) {
  // x [1 plane, 2, 2] by 2 rows and 3 columns: y [4, 6].
  const UpsampleShape s{.planes = 1, .in_h = 2, .in_w = 2, .factor_h = 2, .factor_w = 3};
  std::vector<float> y(24);
  upsample_nearest_forward(s, std::vector<float>{1, 2, 3, 4}, y);
  EXPECT_EQ(y, (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
  const UpsampleShape planes{.planes = 3, .in_h = 3, .in_w = 2, .factor_h = 2, .factor_w = 2};
  const std::vector<float> x = random_values(18, 23), dy = random_values(72, 24);
  std::vector<float> dx(18);
  upsample_nearest_backward(planes, dy, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { upsample_nearest_forward(planes, in, out); }, x, 72, dy, dx));
}

// torch's bilinear upsampling with align_corners=False: one row [0, 4] by 2 columns reads
// the coordinates -0.25 (clamped to 0), 0.25, 0.75 and 1.25 (the last pixel beyond it).
TEST(KernelUpsampleBilinear, WeightsAtHalfPixelCentresAndGradientMatches) {
  const UpsampleShape row{.planes = 1, .in_h = 1, .in_w = 2, .factor_h = 1, .factor_w = 2};
  std::vector<float> y(4);
  upsample_bilinear_forward(row, std::vector<float>{0, 4}, y);
  EXPECT_EQ(y, (std::vector<float>{0, 1, 3, 4}));
  // x3 rows: (o + 0.5) / 3 - 0.5 is -1/3, 0, 1/3 for the first pixel's rows.
  const UpsampleShape column{.planes = 1, .in_h = 2, .in_w = 1, .factor_h = 3, .factor_w = 1};
  std::vector<float> z(6);
  upsample_bilinear_forward(column, std::vector<float>{0, 3}, z);
  const std::vector<float> expected = {0, 0, 1, 2, 3, 3};
  for (std::size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(z[i], expected[i], 1e-6) << i;
  const UpsampleShape planes{.planes = 3, .in_h = 3, .in_w = 4, .factor_h = 2, .factor_w = 3};
  const std::vector<float> x = random_values(36, 25), dy = random_values(216, 26);
  std::vector<float> dx(36);
  upsample_bilinear_backward(planes, dy, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { upsample_bilinear_forward(planes, in, out); }, x, 216, dy, dx));
}

TEST(KernelHardActivations, ValuesAndGradientsMatch) {
  std::vector<float> y(4);
  hard_sigmoid_forward(std::vector<float>{-4.0f, -1.5f, 0.0f, 3.5f}, y);
  EXPECT_EQ(y, (std::vector<float>{0.0f, 0.25f, 0.5f, 1.0f}));
  hard_swish_forward(std::vector<float>{-4.0f, -1.5f, 0.0f, 3.5f}, y);
  EXPECT_EQ(y, (std::vector<float>{-0.0f, -0.375f, 0.0f, 3.5f}));
  // Both sides of the kinks at -3 and 3, none within a step of them.
  std::vector<float> x = testing::away_from_zero(30, 16, 0.05f, 2.8f);
  for (std::size_t i = 0; i < x.size(); i += 4) x[i] += x[i] > 0 ? 3.2f : -3.2f;
  const std::vector<float> dy = random_values(30, 17);
  std::vector<float> out(30), dx(30);
  hard_sigmoid_forward(x, out);
  hard_sigmoid_backward(dy, out, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto o) { hard_sigmoid_forward(in, o); }, x, 30, dy, dx, 1e-3f));
  hard_swish_backward(dy, x, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto o) { hard_swish_forward(in, o); }, x, 30, dy, dx, 1e-3f));
}

TEST(KernelLeakyRelu, ValuesAndGradientsMatch) {
  std::vector<float> y(4);
  leaky_relu_forward(0.2f, std::vector<float>{-2.0f, -0.5f, 0.0f, 3.0f}, y);
  EXPECT_EQ(y, (std::vector<float>{-0.4f, -0.1f, 0.0f, 3.0f}));
  const std::vector<float> x = testing::away_from_zero(30, 18, 0.05f, 2.0f), dy = random_values(30, 19);
  std::vector<float> out(30), dx(30);
  leaky_relu_forward(0.2f, x, out);
  leaky_relu_backward(0.2f, dy, out, dx);  // by the output, as the node computes in place
  EXPECT_TRUE(gradient_matches([&](auto in, auto o) { leaky_relu_forward(0.2f, in, o); }, x, 30, dy, dx, 1e-3f));
}

TEST(KernelElu, ValuesAndGradientsMatch) {
  std::vector<float> y(3);
  elu_forward(0.5f, std::vector<float>{-2.0f, 0.0f, 3.0f}, y);
  EXPECT_FLOAT_EQ(y[0], 0.5f * (std::exp(-2.0f) - 1.0f));
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 3.0f);
  const std::vector<float> x = testing::away_from_zero(30, 20, 0.05f, 3.0f), dy = random_values(30, 21);
  std::vector<float> out(30), dx(30);
  elu_forward(0.5f, x, out);
  elu_backward(0.5f, dy, out, dx);  // by the output, as the node computes in place
  EXPECT_TRUE(gradient_matches([&](auto in, auto o) { elu_forward(0.5f, in, o); }, x, 30, dy, dx, 1e-3f));
}

TEST(KernelSoftplus, ValuesAndGradientsMatch) {
  std::vector<float> y(4);
  softplus_forward(std::vector<float>{-30.0f, 0.0f, 2.0f, 25.0f}, y);
  EXPECT_FLOAT_EQ(y[0], std::exp(-30.0f));  // not 0: ln(1 + e^x) is e^x there
  EXPECT_FLOAT_EQ(y[1], std::log(2.0f));
  EXPECT_FLOAT_EQ(y[2], std::log1p(std::exp(2.0f)));
  EXPECT_EQ(y[3], 25.0f);
  const std::vector<float> x = random_values(30, 22), dy = random_values(30, 23);
  std::vector<float> scaled(30), out(30), dx(30);
  for (std::size_t i = 0; i < x.size(); ++i) scaled[i] = 4.0f * x[i];
  softplus_forward(scaled, out);
  softplus_backward(dy, scaled, dx);
  EXPECT_TRUE(gradient_matches([&](auto in, auto o) { softplus_forward(in, o); }, scaled, 30, dy, dx, 1e-3f));
}

// torch's PReLU, one slope per channel: x [2, 3, 4] by slopes [1, 3, 1], the input kept
// away from the kink at 0, where the finite differences would straddle it.
TEST(KernelPRelu, ValuesAndBothGradientsMatch) {
  BroadcastShape s;
  s.rank = 3;
  s.dims = {2, 3, 4};
  s.b_dims = {1, 3, 1};
  const std::vector<float> x = testing::away_from_zero(24, 24, 0.05f, 2.0f), slope = {0.25f, -0.5f, 1.5f},
                           dy = random_values(24, 25);
  std::vector<float> y(24), dx(24), dslope(3);
  prelu_forward(s, x, slope, y);
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(y[i], x[i] > 0 ? x[i] : slope[i / 4 % 3] * x[i]) << i;
  prelu_backward_input(s, dy, x, slope, dx);
  prelu_backward_slope(s, dy, x, dslope);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { prelu_forward(s, in, slope, out); }, x, 24, dy, dx, 1e-3f));
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { prelu_forward(s, x, in, out); }, slope, 24, dy, dslope, 1e-3f));
}

TEST(KernelMul, BroadcastAndBothGradientsMatch) {
  // a [2, 3, 4] by b [2, 3, 1]: squeeze-and-excitation's scale, one per channel.
  BroadcastShape s;
  s.rank = 3;
  s.dims = {2, 3, 4};
  s.b_dims = {2, 3, 1};
  const std::vector<float> a = random_values(24, 18), b = random_values(6, 19), dy = random_values(24, 20);
  std::vector<float> y(24), da(24), db(6);
  mul_forward(s, a, b, y);
  EXPECT_FLOAT_EQ(y[13], a[13] * b[3]);  // element (1, 0, 1)
  mul_backward_a(s, dy, b, da);
  mul_backward_b(s, dy, a, db);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { mul_forward(s, in, b, out); }, a, 24, dy, da));
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { mul_forward(s, a, in, out); }, b, 24, dy, db));
}

// a [2, 3, 4] / b [1, 3, 1]: b repeats over the batch and the last axis; b kept away
// from zero, where the quotient's derivatives blow up.
TEST(KernelDiv, BroadcastAndBothGradientsMatch) {
  BroadcastShape s;
  s.rank = 3;
  s.dims = {2, 3, 4};
  s.b_dims = {1, 3, 1};
  const std::vector<float> a = random_values(24, 30), b = away_from_zero(3, 31, 0.5f, 2.0f),
                           dy = random_values(24, 32);
  std::vector<float> y(24), da(24), db(3);
  div_forward(s, a, b, y);
  EXPECT_FLOAT_EQ(y[12 + 4 + 1], a[17] / b[1]);  // element (1, 1, 1)
  div_backward_a(s, dy, b, da);
  div_backward_b(s, dy, a, b, db);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { div_forward(s, in, b, out); }, a, 24, dy, da, 1e-3f));
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { div_forward(s, a, in, out); }, b, 24, dy, db, 1e-3f));
}

// Swin's attention mask, a fixed [1, 3, 1, 4] over [2, 3, 2, 4] (windows, heads, rows,
// columns): add_constant's forward; its input's gradient flows through, it has no other.
TEST(KernelAddBroadcast, AddsTheFixedTensorRepeated) {
  BroadcastShape s;
  s.rank = 4;
  s.dims = {2, 3, 2, 4};
  s.b_dims = {1, 3, 1, 4};
  const std::vector<float> x = random_values(48, 42), c = random_values(12, 43);
  std::vector<float> y(48);
  add_broadcast_forward(s, x, c, y);
  EXPECT_EQ(y[24 + 8 + 4 + 1], x[37] + c[4 + 1]);  // element (1, 1, 1, 1)
}

// A relative position bias: a table of 5 gathered by a fixed [1, 2, 3] index (repeats
// included) over [2, 2, 3]; the table's gradient scatter-adds dY, matched to finite differences.
TEST(KernelAddGathered, TableGradientMatchesFiniteDifferences) {
  BroadcastShape s;
  s.rank = 3;
  s.dims = {2, 2, 3};
  s.b_dims = {1, 2, 3};
  const std::vector<float> index = {4, 0, 2, 2, 4, 1};  // entry 3 unused, 2 and 4 twice
  const std::vector<float> x = random_values(12, 44), table = random_values(5, 45), dy = random_values(12, 46);
  std::vector<float> y(12), dtable(5);
  add_gathered_forward(s, x, table, index, y);
  EXPECT_EQ(y[6 + 4], x[10] + table[4]);  // element (1, 1, 1): index 4
  add_gathered_backward(s, dy, index, dtable);
  EXPECT_EQ(dtable[3], 0.0f);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { add_gathered_forward(s, x, in, index, out); }, table, 12, dy,
                               dtable));
  const std::vector<float> outside = {5, 0, 0, 0, 0, 0};
  EXPECT_THROW(add_gathered_forward(s, x, table, outside, y), InternalError);
}

// ConvNeXt's layer scale, [1, C, 1, 1] over [N, C, H, W] (the runtime's mul_parameter): the
// parameter repeats over the batch, ahead of its own axis, as well as over the image.
TEST(KernelMul, LayerScaleOverBatchAndImageAndBothGradientsMatch) {
  BroadcastShape s;
  s.rank = 4;
  s.dims = {2, 3, 2, 2};
  s.b_dims = {1, 3, 1, 1};
  const std::vector<float> x = random_values(24, 21), p = random_values(3, 22), dy = random_values(24, 23);
  std::vector<float> y(24), dx(24), dp(3);
  mul_forward(s, x, p, y);
  EXPECT_FLOAT_EQ(y[12 + 4 + 1], x[17] * p[1]);  // element (1, 1, 0, 1)
  mul_backward_a(s, dy, p, dx);
  mul_backward_b(s, dy, x, dp);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { mul_forward(s, in, p, out); }, x, 24, dy, dx));
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { mul_forward(s, x, in, out); }, p, 24, dy, dp));
}

// Along the rows of [2, c, 3] pieces (axis 1 of rank 3, or an image's rows after the
// channels): 2 rows of each, joined; the gradient gives each its block back.
TEST(KernelConcat, AlongAnInnerAxisAndTheGradientTakesEachBlockBack) {
  const std::vector<float> a = random_values(2 * 1 * 3, 24), b = random_values(2 * 2 * 3, 25);
  std::vector<float> y(2 * 3 * 3);
  concat_forward_part(2, a, 3, y, 9, 0);
  concat_forward_part(2, b, 6, y, 9, 3);
  EXPECT_EQ(y[9], a[3]);       // second row block starts with a's second
  EXPECT_EQ(y[9 + 3], b[6]);
  std::vector<float> db(12);
  concat_backward_part(2, y, 9, 3, db, 6);
  EXPECT_EQ(db, b);
}

}  // namespace
}  // namespace poet::kernels
