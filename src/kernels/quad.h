// Four floats as one value (GCC's vector extension): an SSE register on baseline x86-64, so
// loops written on it run four lanes at a time with no reliance on the vectorizer, and lane
// k stays lane k (sums in fixed lanes keep their bits whatever vectors the target has).
// Wider types change the ABI of a call without AVX (GCC warns); the kernels are built for
// baseline x86-64. Also a matrix transposition by 4 x 4 blocks of them.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace poet::kernels::detail {

using Quad = float __attribute__((vector_size(4 * sizeof(float))));
using QuadMask = std::int32_t __attribute__((vector_size(4 * sizeof(std::int32_t))));  // a comparison's lanes

inline Quad load_quad(const float* p) {
  Quad v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store_quad(float* p, Quad v) { std::memcpy(p, &v, sizeof v); }

// Lane k of a comparison (all ones or all zeros) as bit k.
inline unsigned bits_of(QuadMask m) {
#if defined(__SSE2__)
  return static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(reinterpret_cast<__m128i>(m))));
#else
  return (m[0] & 1u) | (m[1] & 2u) | (m[2] & 4u) | (m[3] & 8u);
#endif
}

// to[r][c] = from[c][r] for r < rows, c < cols (row strides ld_from, ld_to): by 4 x 4 blocks
// of Quads (four loads, eight shuffles, four stores), the edges one by one. A transposition
// element by element cost about what the convolution's stacked weight gradient saves
// (kernels_conv.cpp).
inline void transpose_by_quads(const float* from, std::int64_t ld_from, std::int64_t cols, std::int64_t rows, float* to,
                               std::int64_t ld_to) {
  const std::int64_t cols4 = cols / 4 * 4, rows4 = rows / 4 * 4;
  for (std::int64_t c = 0; c < cols4; c += 4)
    for (std::int64_t r = 0; r < rows4; r += 4) {
      const float* f = from + c * ld_from + r;
      const Quad a = load_quad(f), b = load_quad(f + ld_from), e = load_quad(f + 2 * ld_from),
                 d = load_quad(f + 3 * ld_from);
      const Quad ab_low = __builtin_shufflevector(a, b, 0, 4, 1, 5), ab_high = __builtin_shufflevector(a, b, 2, 6, 3, 7);
      const Quad ed_low = __builtin_shufflevector(e, d, 0, 4, 1, 5), ed_high = __builtin_shufflevector(e, d, 2, 6, 3, 7);
      store_quad(to + r * ld_to + c, __builtin_shufflevector(ab_low, ed_low, 0, 1, 4, 5));
      store_quad(to + (r + 1) * ld_to + c, __builtin_shufflevector(ab_low, ed_low, 2, 3, 6, 7));
      store_quad(to + (r + 2) * ld_to + c, __builtin_shufflevector(ab_high, ed_high, 0, 1, 4, 5));
      store_quad(to + (r + 3) * ld_to + c, __builtin_shufflevector(ab_high, ed_high, 2, 3, 6, 7));
    }
  for (std::int64_t c = 0; c < cols; ++c)
    for (std::int64_t r = c < cols4 ? rows4 : 0; r < rows; ++r) to[r * ld_to + c] = from[c * ld_from + r];
}

}  // namespace poet::kernels::detail
