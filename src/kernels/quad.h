// Four floats as one value (GCC's vector extension): an SSE register on baseline x86-64, so
// loops written on it run four lanes at a time with no reliance on the vectorizer, and lane
// k stays lane k (sums in fixed lanes keep their bits whatever vectors the target has).
// Wider types change the ABI of a call without AVX (GCC warns); the kernels are built for
// baseline x86-64.
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

}  // namespace poet::kernels::detail
