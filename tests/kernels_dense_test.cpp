// Linear layers, embeddings, and the determinism of the BLAS GEMM behind them.
#include <gtest/gtest.h>

#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_activation.h"
#include "poet/kernels/kernels_dense.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

using testing::bit_identical;
using testing::gradient_matches;
using testing::random_values;

TEST(KernelGradCheck, RejectsAWrongGradient) {
  // The checker must be able to fail: ReLU's gradient with the mask inverted.
  const std::vector<float> x = testing::away_from_zero(20, 1, 0.1f, 1.0f);
  const std::vector<float> w = random_values(20, 2);
  std::vector<float> y(20), wrong(20);
  relu_forward(x, y);
  for (std::size_t i = 0; i < 20; ++i) wrong[i] = y[i] > 0 ? 0.0f : w[i];
  const auto forward = [](std::span<const float> in, std::span<float> out) { relu_forward(in, out); };
  EXPECT_FALSE(gradient_matches(forward, x, 20, w, wrong));
}

TEST(KernelLinear, ForwardWorkedByHand) {
  const LinearShape s{.rows = 1, .in_features = 2, .out_features = 3, .bias = true};
  const std::vector<float> x{1, 2}, weight{1, 0, 0, 1, 1, 1}, bias{0.5f, 0, -1};
  std::vector<float> y(3);
  linear_forward(s, x, weight, bias, y);
  EXPECT_EQ(y, (std::vector<float>{1.5f, 2.0f, 2.0f}));
}

void check_linear_gradients(bool with_bias) {
  const LinearShape s{.rows = 3, .in_features = 4, .out_features = 5, .bias = with_bias};
  std::vector<float> x = random_values(12, 1), weight = random_values(20, 2);
  std::vector<float> bias = s.bias ? random_values(5, 3) : std::vector<float>{};
  const std::vector<float> dy = random_values(15, 4);
  std::vector<float> dx(12), dweight(20), dbias(bias.size());
  linear_backward_input(s, dy, weight, dx);
  linear_backward_params(s, dy, x, dweight, dbias);

  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { linear_forward(s, in, weight, bias, out); }, x, 15, dy, dx));
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { linear_forward(s, x, in, bias, out); }, weight, 15, dy,
                               dweight));
  if (s.bias) {
    EXPECT_TRUE(gradient_matches([&](auto in, auto out) { linear_forward(s, x, weight, in, out); }, bias, 15, dy,
                                 dbias));
  }
}

TEST(KernelLinear, GradientsMatchFiniteDifferences) { check_linear_gradients(true); }
TEST(KernelLinear, GradientsWithoutBiasMatchFiniteDifferences) { check_linear_gradients(false); }

TEST(KernelLinear, WrongSpanSizeIsABug) {
  const LinearShape s{.rows = 2, .in_features = 3, .out_features = 4, .bias = true};
  std::vector<float> x(6), weight(12), bias(3), y(8);  // bias one short
  EXPECT_THROW(linear_forward(s, x, weight, bias, y), InternalError);
  EXPECT_THROW(validate(LinearShape{.rows = 0, .in_features = 3, .out_features = 4}), InputError);
}

// The arena places a tensor at different offsets under different plans; the GEMM must not
// give different bits for a different alignment, nor from one call to the next.
TEST(KernelGemm, BitIdenticalAcrossCallsAndAlignments) {
  const LinearShape s{.rows = 37, .in_features = 61, .out_features = 29, .bias = true};
  const std::vector<float> x = random_values(37 * 61, 5), weight = random_values(29 * 61, 6),
                           bias = random_values(29, 7);
  std::vector<float> reference(37 * 29);
  linear_forward(s, x, weight, bias, reference);
  for (std::size_t shift = 0; shift < 4; ++shift) {
    std::vector<float> x_buffer(x.size() + shift), y_buffer(reference.size() + shift);
    std::copy(x.begin(), x.end(), x_buffer.begin() + static_cast<std::ptrdiff_t>(shift));
    std::span<const float> x_shifted(x_buffer.data() + shift, x.size());
    std::span<float> y_shifted(y_buffer.data() + shift, reference.size());
    linear_forward(s, x_shifted, weight, bias, y_shifted);
    EXPECT_TRUE(bit_identical(y_shifted, reference)) << "shift " << shift;
  }
}

TEST(KernelEmbedding, ForwardLooksUpRows) {
  const EmbeddingShape s{.tokens = 3, .vocab = 4, .dim = 2};
  const std::vector<std::int32_t> ids{2, 0, 2};
  const std::vector<float> table{0, 1, 10, 11, 20, 21, 30, 31};
  std::vector<float> y(6);
  embedding_forward(s, ids, table, y);
  EXPECT_EQ(y, (std::vector<float>{20, 21, 0, 1, 20, 21}));
}

TEST(KernelEmbedding, TableGradientMatchesFiniteDifferencesWithRepeatedIds) {
  const EmbeddingShape s{.tokens = 5, .vocab = 4, .dim = 3};
  const std::vector<std::int32_t> ids{1, 3, 1, 0, 1};
  const std::vector<float> table = random_values(12, 1), dy = random_values(15, 2);
  std::vector<float> dtable(12);
  embedding_backward_table(s, ids, dy, dtable);
  EXPECT_TRUE(gradient_matches([&](auto in, auto out) { embedding_forward(s, ids, in, out); }, table, 15, dy, dtable));
  // Row 2 is never looked up.
  EXPECT_EQ(dtable[6], 0.0f);
}

TEST(KernelEmbedding, IdOutsideTheVocabularyIsAnInputError) {
  const EmbeddingShape s{.tokens = 2, .vocab = 4, .dim = 1};
  const std::vector<std::int32_t> ids{1, 4};
  std::vector<float> table(4), y(2);
  EXPECT_THROW(embedding_forward(s, ids, table, y), InputError);
}

}  // namespace
}  // namespace poet::kernels
