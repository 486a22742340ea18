// Inverted dropout with masks from the counter-based RNG.
#include "poet/kernels/kernels_dropout.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernel_checks.h"
#include "parallel_for.h"
#include "poet/util/error.h"

namespace poet::kernels {
namespace {

// An element is kept when the top 24 bits of its random word reach this threshold: an
// integer compare, so the mask does not depend on how a platform rounds floats.
std::uint32_t keep_threshold(float p) {
  if (!(p >= 0.0f && p <= 1.0f)) throw InputError(fmt::format("dropout: p must be in [0, 1], not {}", p));
  return static_cast<std::uint32_t>(std::lround(static_cast<double>(p) * (1u << 24)));
}

float keep_scale(float p) { return p < 1.0f ? 1.0f / (1.0f - p) : 0.0f; }

// out[i] = in[i] x scale where kept, 0 elsewhere; the forward and the backward are this.
void apply_mask(const char* kernel, const RandomKey& key, float p, std::span<const float> in, std::span<float> out) {
  detail::expect_size(kernel, "output", out, static_cast<std::int64_t>(in.size()));
  // The block index is the counter's 32-bit word: 2^34 elements per tensor at most.
  POET_CHECK(in.size() / 4 <= UINT32_MAX, fmt::format("{}: a tensor of {} elements is too large", kernel, in.size()));
  const std::uint32_t threshold = keep_threshold(p);
  const float scale = keep_scale(p);
  // Element i's word is word i % 4 of block i / 4 whichever thread draws it; the ranges
  // start at multiples of 4 (parallel_blocks' block), so no block is split between two.
  // Words are drawn eight blocks at a time; a range's last draw may go past its end.
  detail::parallel_blocks(static_cast<std::int64_t>(in.size()), [&](std::int64_t begin, std::int64_t end) {
    std::uint32_t words[kWordsPerEightBlocks];
    for (auto base = static_cast<std::size_t>(begin); base < static_cast<std::size_t>(end);
         base += kWordsPerEightBlocks) {
      random_eight_blocks(key, static_cast<std::uint32_t>(base / 4), words);
      const std::size_t count = std::min<std::size_t>(kWordsPerEightBlocks, static_cast<std::size_t>(end) - base);
      // The select as a mask of bits, which the vectorizer takes (a branch per element
      // mispredicts at the drop rate): the same values, +0 where dropped.
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t kept = (words[i] >> 8) >= threshold ? ~0u : 0u;
        out[base + i] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(in[base + i] * scale) & kept);
      }
    }
  });
}

}  // namespace

void dropout_forward(const RandomKey& key, float p, std::span<const float> x, std::span<float> y) {
  apply_mask("dropout_forward", key, p, x, y);
}

void dropout_backward(const RandomKey& key, float p, std::span<const float> dy, std::span<float> dx) {
  apply_mask("dropout_backward", key, p, dy, dx);
}

}  // namespace poet::kernels
