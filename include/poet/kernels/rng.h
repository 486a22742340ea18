// Counter-based randomness: the bits for an element are a pure function of (seed, step,
// node, element index), so recomputing a dropout reproduces its mask exactly, in any
// order, with no generator state to save or restore.
#pragma once

#include <array>
#include <cstdint>

namespace poet::kernels {

struct RandomKey {
  std::uint64_t seed = 0;
  std::uint64_t step = 0;
  std::uint32_t node = 0;
};

// Philox-4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11): four 32-bit words of output per 128-bit counter under a 64-bit key.
std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> counter, std::array<std::uint32_t, 2> key);

// The 4 words for elements 4 block .. 4 block + 3 of the tensor `key` names.
std::array<std::uint32_t, 4> random_block(const RandomKey& key, std::uint32_t block);

// The words of blocks `first` .. `first` + 7 (elements 4 first .. 4 first + 31) in element
// order: random_block's, eight blocks at once (in AVX2 lanes where the CPU has them).
inline constexpr int kWordsPerEightBlocks = 32;
void random_eight_blocks(const RandomKey& key, std::uint32_t first, std::uint32_t* words);

// The 32 random bits of one element.
std::uint32_t random_bits(const RandomKey& key, std::uint64_t index);

}  // namespace poet::kernels
