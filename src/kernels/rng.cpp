// Philox-4x32-10, written from the description in Salmon et al. (SC'11).
#include "poet/kernels/rng.h"

namespace poet::kernels {
namespace {

constexpr std::uint32_t kMultiplier0 = 0xD2511F53u;
constexpr std::uint32_t kMultiplier1 = 0xCD9E8D57u;
// The Weyl sequence that bumps the key between rounds: the golden ratio and sqrt(3) - 1.
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;
constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;

struct HiLo {
  std::uint32_t hi, lo;
};

HiLo multiply(std::uint32_t a, std::uint32_t b) {
  const std::uint64_t product = static_cast<std::uint64_t>(a) * b;
  return {static_cast<std::uint32_t>(product >> 32), static_cast<std::uint32_t>(product)};
}

}  // namespace

std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> c, std::array<std::uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kWeyl0;
      k[1] += kWeyl1;
    }
    const HiLo p0 = multiply(kMultiplier0, c[0]);
    const HiLo p1 = multiply(kMultiplier1, c[2]);
    c = {p1.hi ^ c[1] ^ k[0], p1.lo, p0.hi ^ c[3] ^ k[1], p0.lo};
  }
  return c;
}

// The counter is (block, node, step low, step high) and the key the seed, so every
// (seed, step, node, element) has its own 32 bits and no two of them share a block.
std::array<std::uint32_t, 4> random_block(const RandomKey& key, std::uint32_t block) {
  return philox4x32_10({block, key.node, static_cast<std::uint32_t>(key.step), static_cast<std::uint32_t>(key.step >> 32)},
                       {static_cast<std::uint32_t>(key.seed), static_cast<std::uint32_t>(key.seed >> 32)});
}

std::uint32_t random_bits(const RandomKey& key, std::uint64_t index) {
  return random_block(key, static_cast<std::uint32_t>(index / 4))[index % 4];
}

}  // namespace poet::kernels
