#include "libc.h"

#include "bsp.h"

void *memcpy(void *restrict to, const void *restrict from, size_t n) {
  unsigned char *d = to;
  const unsigned char *s = from;
  while (n--) *d++ = *s++;
  return to;
}

void *memmove(void *to, const void *from, size_t n) {
  unsigned char *d = to;
  const unsigned char *s = from;
  if (d < s) {
    while (n--) *d++ = *s++;
  } else {
    while (n--) d[n] = s[n];
  }
  return to;
}

void *memset(void *to, int value, size_t n) {
  unsigned char *d = to;
  while (n--) *d++ = (unsigned char)value;
  return to;
}

size_t fw_strlen(const char *s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}

uint32_t fw_argument(const char *line, const char *key, uint32_t fallback) {
  const size_t k = fw_strlen(key);
  for (const char *p = line; *p; ++p) {
    if ((p != line && p[-1] != ' ') || p[k] != '=') continue;
    size_t i = 0;
    while (i < k && p[i] == key[i]) ++i;
    if (i < k) continue;
    uint32_t v = 0;
    const char *d = p + k + 1;
    if (*d < '0' || *d > '9') return fallback;
    for (; *d >= '0' && *d <= '9'; ++d) v = v * 10u + (uint32_t)(*d - '0');
    return v;
  }
  return fallback;
}

void fw_print(const char *s) { bsp_output(s, (uint32_t)fw_strlen(s)); }

void fw_print_u32(uint32_t v) {
  char digits[11];
  int n = 0;
  do {
    digits[10 - n++] = (char)('0' + v % 10u);
    v /= 10u;
  } while (v);
  bsp_output(digits + 11 - n, (uint32_t)n);
}

void fw_print_i32(int32_t v) {
  if (v < 0) {
    fw_print("-");
    fw_print_u32((uint32_t)(-(v + 1)) + 1u);
    return;
  }
  fw_print_u32((uint32_t)v);
}

void fw_print_float(float v, int decimals) {
  if (v != v) {
    fw_print("nan");
    return;
  }
  if (v < 0) {
    fw_print("-");
    v = -v;
  }
  if (v > 4.0e9f) {
    fw_print("inf");
    return;
  }
  uint32_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10u;
  /* Rounded to `decimals` digits; the whole part must fit 32 bits with them. */
  const float scaled = v * (float)scale + 0.5f;
  if (scaled >= 4.0e9f) {
    fw_print_u32((uint32_t)v);
    return;
  }
  const uint32_t all = (uint32_t)scaled;
  fw_print_u32(all / scale);
  if (decimals == 0) return;
  fw_print(".");
  uint32_t frac = all % scale;
  for (uint32_t d = scale / 10u; d > 0; d /= 10u) {
    const char c = (char)('0' + frac / d % 10u);
    bsp_output(&c, 1);
  }
}
