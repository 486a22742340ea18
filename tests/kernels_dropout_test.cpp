// The counter-based RNG and dropout masks that recomputation reproduces exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_dropout.h"
#include "poet/kernels/rng.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

using testing::bit_identical;
using testing::random_values;

// Known answers published with Random123 (its kat_vectors file): counter, key -> output.
TEST(KernelRng, PhiloxMatchesTheKnownAnswers) {
  using Words = std::array<std::uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(KernelRng, EveryPartOfTheKeyChangesTheBits) {
  const RandomKey key{.seed = 7, .step = 3, .node = 11};
  const std::uint32_t bits = random_bits(key, 5);
  EXPECT_EQ(random_bits(key, 5), bits);
  EXPECT_NE(random_bits({.seed = 8, .step = 3, .node = 11}, 5), bits);
  EXPECT_NE(random_bits({.seed = 7, .step = 4, .node = 11}, 5), bits);
  EXPECT_NE(random_bits({.seed = 7, .step = 3ull + (1ull << 32), .node = 11}, 5), bits);
  EXPECT_NE(random_bits({.seed = 7, .step = 3, .node = 12}, 5), bits);
  EXPECT_NE(random_bits(key, 6), bits);
  EXPECT_EQ(random_bits(key, 5), random_block(key, 1)[1]);
}

// The eight-lane Philox (AVX2 where the CPU has it) against the block function, with keys
// that fill every word of the counter and key, and blocks up to the last counter value.
TEST(KernelRng, EightBlocksAtOnceAreTheBlocksInElementOrder) {
  for (const RandomKey key : {RandomKey{}, RandomKey{.seed = 0x0123456789abcdefull, .step = 0xfedcba9876543210ull,
                                                    .node = 0x89abcdefu}}) {
    for (const std::uint32_t first : {0u, 1u, 13u, 0xfffffff8u}) {
      std::uint32_t words[kWordsPerEightBlocks];
      random_eight_blocks(key, first, words);
      for (std::uint32_t e = 0; e < kWordsPerEightBlocks; ++e)
        ASSERT_EQ(words[e], random_block(key, first + e / 4)[e % 4]) << "block " << first << " + " << e / 4;
    }
  }
}

// Each element kept or dropped as its own word says, whether it falls in a run of eight
// blocks or in the tail after the last such run, at every size up to three runs.
TEST(KernelDropout, EveryElementFollowsItsOwnRandomWord) {
  const RandomKey key{.seed = 5, .step = 6, .node = 7};
  const float p = 0.3f;
  const std::uint32_t threshold = static_cast<std::uint32_t>(std::lround(0.3 * (1u << 24)));
  for (std::size_t n = 1; n <= 3 * kWordsPerEightBlocks + 5; ++n) {
    const std::vector<float> x = random_values(n, static_cast<unsigned>(n));
    std::vector<float> y(n);
    dropout_forward(key, p, x, y);
    for (std::size_t i = 0; i < n; ++i) {
      const bool kept = (random_bits(key, i) >> 8) >= threshold;
      ASSERT_EQ(y[i], kept ? x[i] * (1.0f / (1.0f - p)) : 0.0f) << "element " << i << " of " << n;
    }
  }
}

std::vector<float> dropped(const RandomKey& key, float p, std::size_t n) {
  std::vector<float> y(n);
  dropout_forward(key, p, std::vector<float>(n, 1.0f), y);
  return y;
}

TEST(KernelDropout, SameKeySameMaskAndAnotherStepAnotherMask) {
  const RandomKey key{.seed = 42, .step = 9, .node = 5};
  const std::vector<float> first = dropped(key, 0.5f, 1001);
  EXPECT_TRUE(bit_identical(dropped(key, 0.5f, 1001), first));  // a recomputation
  EXPECT_NE(dropped({.seed = 42, .step = 10, .node = 5}, 0.5f, 1001), first);
  EXPECT_NE(dropped({.seed = 42, .step = 9, .node = 6}, 0.5f, 1001), first);
}

TEST(KernelDropout, KeepRateIsNearOneMinusP) {
  const std::size_t n = 100000;
  for (float p : {0.1f, 0.5f}) {
    const std::vector<float> y = dropped({.seed = 1, .step = 2, .node = 3}, p, n);
    std::size_t kept = 0;
    for (float v : y) {
      if (v != 0.0f) {
        ++kept;
        EXPECT_FLOAT_EQ(v, 1.0f / (1.0f - p));  // inverted dropout scales what it keeps
      }
    }
    // The standard deviation of the rate is at most 0.0016 for 10^5 elements.
    EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - p, 0.01) << "p = " << p;
  }
}

TEST(KernelDropout, BackwardAppliesTheForwardMask) {
  const RandomKey key{.seed = 3, .step = 1, .node = 2};
  const float p = 0.3f;
  const std::vector<float> x = random_values(257, 1, 0.5f, 1.0f), dy = random_values(257, 2);
  std::vector<float> y(257), dx(257);
  dropout_forward(key, p, x, y);
  dropout_backward(key, p, dy, dx);
  // Linear in x with the mask fixed, so finite differences are exact up to rounding.
  EXPECT_TRUE(testing::gradient_matches([&](auto in, auto out) { dropout_forward(key, p, in, out); }, x, 257, dy,
                                        dx));
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i] == 0.0f, dx[i] == 0.0f) << i;
}

TEST(KernelDropout, ExtremeRatesAndBadRates) {
  const RandomKey key{.seed = 1, .step = 1, .node = 1};
  EXPECT_EQ(dropped(key, 0.0f, 100), std::vector<float>(100, 1.0f));
  EXPECT_EQ(dropped(key, 1.0f, 100), std::vector<float>(100, 0.0f));
  std::vector<float> y(4);
  EXPECT_THROW(dropout_forward(key, 1.5f, std::vector<float>(4), y), InputError);
  EXPECT_THROW(dropout_forward(key, -0.1f, std::vector<float>(4), y), InputError);
}

}  // namespace
}  // namespace poet::kernels
