#include "libc.h"

/* log(x) = e ln2 + log(m), m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh((m-1)/(m+1)). */
float fw_logf(float x) {
  if (!(x > 0.0f)) return -3.4e38f * 10.0f;
  union {
    float f;
    uint32_t u;
  } v = {x};
  int32_t e = (int32_t)((v.u >> 23) & 0xff) - 127;
  v.u = (v.u & 0x007fffffu) | 0x3f800000u; /* m in [1, 2) */
  if (v.f > 1.41421356f) {
    v.f *= 0.5f;
    ++e;
  }
  const float s = (v.f - 1.0f) / (v.f + 1.0f), s2 = s * s;
  const float series = s * (2.0f + s2 * (2.0f / 3.0f + s2 * (2.0f / 5.0f + s2 * (2.0f / 7.0f + s2 * (2.0f / 9.0f)))));
  return (float)e * 0.693147182f + series;
}
