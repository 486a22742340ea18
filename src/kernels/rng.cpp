// Philox-4x32-10, written from the description in Salmon et al. (SC'11).
#include "poet/kernels/rng.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

namespace {

#if defined(__x86_64__)
bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// The 32 x 32 -> 64-bit products of the eight lanes of `c` with `m`: their low and high words.
__attribute__((target("avx2"))) void multiply_lanes(__m256i c, __m256i m, __m256i& lo, __m256i& hi) {
  const __m256i even = _mm256_mul_epu32(c, m);                        // lanes 0, 2, 4, 6
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);  // lanes 1, 3, 5, 7
  lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// philox4x32_10 of eight consecutive blocks, one per lane, then transposed to element order.
__attribute__((target("avx2"))) void eight_blocks_avx2(const RandomKey& key, std::uint32_t first,
                                                       std::uint32_t* words) {
  __m256i c0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256i c1 = _mm256_set1_epi32(static_cast<int>(key.node));
  __m256i c2 = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(key.step)));
  __m256i c3 = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(key.step >> 32)));
  auto k0 = static_cast<std::uint32_t>(key.seed), k1 = static_cast<std::uint32_t>(key.seed >> 32);
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(kMultiplier0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(kMultiplier1));
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    __m256i lo0, hi0, lo1, hi1;
    multiply_lanes(c0, m0, lo0, hi0);
    multiply_lanes(c2, m1, lo1, hi1);
    c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    c1 = lo1;
    c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c3 = lo0;
  }
  // Lane b of c_w is word w of block first + b; element 4 b + w wants it at 4 b + w.
  const __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
  const __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
  const __m256i b04 = _mm256_unpacklo_epi64(t0, t2), b15 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i b26 = _mm256_unpacklo_epi64(t1, t3), b37 = _mm256_unpackhi_epi64(t1, t3);
  auto* out = reinterpret_cast<__m256i*>(words);
  _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(b04, b15, 0x20));
  _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(b26, b37, 0x20));
  _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(b04, b15, 0x31));
  _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(b26, b37, 0x31));
}
#endif

}  // namespace

void random_eight_blocks(const RandomKey& key, std::uint32_t first, std::uint32_t* words) {
#if defined(__x86_64__)
  if (cpu_has_avx2()) return eight_blocks_avx2(key, first, words);
#endif
  for (std::uint32_t b = 0; b < 8; ++b) {
    const auto block = random_block(key, first + b);
    for (int w = 0; w < 4; ++w) words[4 * b + static_cast<std::uint32_t>(w)] = block[static_cast<std::size_t>(w)];
  }
}

std::uint32_t random_bits(const RandomKey& key, std::uint64_t index) {
  return random_block(key, static_cast<std::uint32_t>(index / 4))[index % 4];
}

}  // namespace poet::kernels
