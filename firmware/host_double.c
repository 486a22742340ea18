#include "host_double.h"

/* A 128-bit unsigned integer. */
typedef struct {
  uint64_t hi, lo;
} u128;

static u128 mul_64x64(uint64_t a, uint64_t b) {
  const uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
  const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
  const u128 r = {p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32), (mid << 32) | (uint32_t)p00};
  return r;
}

static int is_zero(u128 x) { return (x.hi | x.lo) == 0; }

/* The index of the highest set bit of x (not 0). */
static int top_bit(u128 x) { return x.hi ? 127 - __builtin_clzll(x.hi) : 63 - __builtin_clzll(x.lo); }

static u128 shift_left(u128 x, int n) { /* 0 <= n < 128 */
  if (n == 0) return x;
  if (n >= 64) {
    const u128 r = {x.lo << (n - 64), 0};
    return r;
  }
  const u128 r = {(x.hi << n) | (x.lo >> (64 - n)), x.lo << n};
  return r;
}

/* Whether any of x's bits below bit n is set (0 <= n <= 128). */
static int any_below(u128 x, int32_t n) {
  if (n <= 0) return 0;
  if (n < 64) return (x.lo << (64 - n)) != 0;
  if (n == 64) return x.lo != 0;
  return x.lo != 0 || (n < 128 ? (x.hi << (128 - n)) != 0 : x.hi != 0);
}

static u128 shift_right(u128 x, int32_t n) { /* 0 <= n */
  if (n == 0) return x;
  if (n >= 128) {
    const u128 r = {0, 0};
    return r;
  }
  if (n >= 64) {
    const u128 r = {0, x.hi >> (n - 64)};
    return r;
  }
  const u128 r = {x.hi >> n, (x.lo >> n) | (x.hi << (64 - n))};
  return r;
}

/* x >> n, with bit 0 set if any bit shifted out was (jamming: all rounding needs of them). */
static u128 shift_right_jam(u128 x, int32_t n) {
  u128 r = shift_right(x, n);
  r.lo |= (uint64_t)any_below(x, n);
  return r;
}

static int less(u128 a, u128 b) { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo); }

static u128 add(u128 a, u128 b) {
  const u128 r = {a.hi + b.hi + (a.lo + b.lo < a.lo), a.lo + b.lo};
  return r;
}

static u128 subtract(u128 a, u128 b) { /* a >= b */
  const u128 r = {a.hi - b.hi - (a.lo < b.lo), a.lo - b.lo};
  return r;
}

/* (-1)^negative m 2^exponent, m 0 or at most 2^53 (a double's significand, or less). */
typedef struct {
  int negative;
  int32_t exponent;
  uint64_t m;
} parts;

static parts unpack(fw_double x) {
  const uint32_t biased = (uint32_t)(x >> 52) & 0x7ffu;
  const uint64_t fraction = x & ((1ull << 52) - 1u);
  parts p = {(int)(x >> 63), biased ? (int32_t)biased - 1075 : -1074, biased ? fraction | (1ull << 52) : fraction};
  return p;
}

/* (-1)^negative m 2^exponent (m > 0) rounded to a double: assumed normal, as the softmax's. */
static fw_double round_to_double(int negative, int32_t exponent, u128 m) {
  const int32_t shift = top_bit(m) - 52;
  uint64_t q;
  if (shift <= 0) {
    q = shift_left(m, -shift).lo;
  } else {
    q = shift_right(m, shift).lo;
    const int round = (int)(shift_right(m, shift - 1).lo & 1u), sticky = any_below(m, shift - 1);
    if (round && (sticky || (q & 1u))) ++q;
  }
  exponent += shift;
  if (q >> 53) {
    q >>= 1;
    ++exponent;
  }
  return ((uint64_t)negative << 63) | ((uint64_t)(exponent + 1075) << 52) | (q & ((1ull << 52) - 1u));
}

fw_double fw_double_fma(fw_double a, fw_double b, fw_double c) {
  const parts pa = unpack(a), pb = unpack(b), pc = unpack(c);
  u128 product = mul_64x64(pa.m, pb.m);
  int32_t product_exponent = pa.exponent + pb.exponent;
  const int product_negative = pa.negative ^ pb.negative;
  u128 addend = {0, pc.m};
  int32_t addend_exponent = pc.exponent;
  if (is_zero(product)) {
    if (pc.m) return c;
    /* An exact zero: -0 only if both are -0. */
    return (uint64_t)(product_negative & pc.negative) << 63;
  }
  if (pc.m == 0) return round_to_double(product_negative, product_exponent, product);
  /* Both with their top bit at 125, the larger then keeps its bits and the smaller is
     shifted to its scale: bits below the rounding point only jam. */
  product_exponent -= 125 - top_bit(product);
  product = shift_left(product, 125 - top_bit(product));
  addend_exponent -= 125 - top_bit(addend);
  addend = shift_left(addend, 125 - top_bit(addend));
  int32_t exponent;
  if (product_exponent >= addend_exponent) {
    addend = shift_right_jam(addend, product_exponent - addend_exponent);
    exponent = product_exponent;
  } else {
    product = shift_right_jam(product, addend_exponent - product_exponent);
    exponent = addend_exponent;
  }
  if (product_negative == pc.negative) return round_to_double(product_negative, exponent, add(product, addend));
  if (less(product, addend)) return round_to_double(pc.negative, exponent, subtract(addend, product));
  const u128 difference = subtract(product, addend);
  if (is_zero(difference)) return 0; /* +0, rounding to nearest */
  return round_to_double(product_negative, exponent, difference);
}

fw_double fw_double_add(fw_double a, fw_double b) { return fw_double_fma(a, 0x3ff0000000000000u, b); }

static uint32_t float_bits(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, sizeof u);
  return u;
}

static float bits_float(uint32_t u) {
  float x;
  __builtin_memcpy(&x, &u, sizeof x);
  return x;
}

fw_double fw_double_from_float(float x) {
  const uint32_t u = float_bits(x), biased = (u >> 23) & 0xffu, fraction = u & 0x7fffffu;
  const uint64_t sign = (uint64_t)(u >> 31) << 63;
  if (biased == 0 && fraction == 0) return sign;
  const u128 m = {0, biased ? fraction | 0x800000u : fraction};
  return round_to_double((int)(u >> 31), biased ? (int32_t)biased - 150 : -149, m) | sign; /* exact */
}

float fw_double_to_float(fw_double x) {
  const parts p = unpack(x);
  const uint32_t sign = (uint32_t)p.negative << 31;
  if (p.m == 0) return bits_float(sign);
  /* p.m 2^exponent = q 2^(e) with q of 24 bits, e >= -149 (the subnormals' scale). */
  int32_t e = p.exponent + (top_bit((u128){0, p.m}) - 23);
  if (e < -149) e = -149;
  const int32_t shift = e - p.exponent; /* > 0: a double has more bits */
  if (shift > 60) return bits_float(sign); /* below half the least subnormal */
  const u128 m = {0, p.m};
  uint32_t q = (uint32_t)shift_right(m, shift).lo;
  const int round = (int)(shift_right(m, shift - 1).lo & 1u), sticky = any_below(m, shift - 1);
  if (round && (sticky || (q & 1u))) ++q;
  if (q >> 24) {
    q >>= 1;
    ++e;
  }
  /* A subnormal has e = -149 and q below 2^23: its exponent field 0; one rounded up to 2^23
     carries into the field's 1, the least normal, as the bits should. */
  const uint32_t field = q >> 23 ? (uint32_t)(e + 150) : 0u;
  return bits_float(sign | (field << 23) | (q & 0x7fffffu));
}

fw_double fw_double_reciprocal(fw_double x) {
  const parts p = unpack(x); /* x normal: m in [2^52, 2^53) */
  const u128 one = {0, 1};
  if (p.m == 1ull << 52) return round_to_double(0, -52 - p.exponent, one); /* x = 2^(52 + exponent) */
  /* q = floor(2^116 / m), in [2^63, 2^64), by long division; the remainder only jams. */
  uint64_t q = 0, remainder = 1;
  for (int bit = 115; bit >= 0; --bit) {
    remainder <<= 1;
    if (remainder >= p.m) {
      remainder -= p.m;
      if (bit < 64) q |= 1ull << bit;
    }
  }
  const u128 jammed = {q >> 63, (q << 1) | (remainder != 0)};
  return round_to_double(0, -117 - p.exponent, jammed);
}

/* glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, from ARM's optimized-routines) with the
   multiply-adds fused, as its x86-64 FMA build computes it: x / ln 2 = k / 32 + r / 32,
   2^(k/32) from the table (the exponent added into its bits), 2^(r/32) by a cubic. */
#define EXP_TABLE_BITS 5
static const uint64_t exp2_table[1 << EXP_TABLE_BITS] = {
    0x3ff0000000000000u, 0x3fefd9b0d3158574u, 0x3fefb5586cf9890fu, 0x3fef9301d0125b51u, 0x3fef72b83c7d517bu,
    0x3fef54873168b9aau, 0x3fef387a6e756238u, 0x3fef1e9df51fdee1u, 0x3fef06fe0a31b715u, 0x3feef1a7373aa9cbu,
    0x3feedea64c123422u, 0x3feece086061892du, 0x3feebfdad5362a27u, 0x3feeb42b569d4f82u, 0x3feeab07dd485429u,
    0x3feea47eb03a5585u, 0x3feea09e667f3bcdu, 0x3fee9f75e8ec5f74u, 0x3feea11473eb0187u, 0x3feea589994cce13u,
    0x3feeace5422aa0dbu, 0x3feeb737b0cdc5e5u, 0x3feec49182a3f090u, 0x3feed503b23e255du, 0x3feee89f995ad3adu,
    0x3feeff76f2fb5e47u, 0x3fef199bdd85529cu, 0x3fef3720dcef9069u, 0x3fef5818dcfba487u, 0x3fef7c97337b9b5fu,
    0x3fefa4afa2a490dau, 0x3fefd0765b6e4540u};
static const fw_double inverse_ln2_scaled = 0x40471547652b82feu; /* 32 / ln 2 */
static const fw_double shift_to_integer = 0x4338000000000000u;   /* 1.5 2^52 */
static const fw_double cubic[3] = {0x3ebc6af84b912394u, 0x3f2ebfce50fac4f3u, 0x3f962e42ff0c52d6u};
static const fw_double one = 0x3ff0000000000000u, zero = 0;

float fw_host_expf(float x) {
  const uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return x + x;               /* NaN */
  if (x > 0x1.62e42ep6f) return bits_float(0x7f800000u);            /* overflow */
  if (x < -0x1.9fe368p6f) return 0.0f;                              /* underflow */
  const fw_double xd = fw_double_from_float(x);
  const fw_double shifted = fw_double_fma(inverse_ln2_scaled, xd, shift_to_integer);
  const uint64_t k = shifted; /* its low bits: the nearest integer k of x 32 / ln 2 */
  const fw_double kd = fw_double_fma(shifted, one, shift_to_integer | (1ull << 63));
  const fw_double r = fw_double_fma(inverse_ln2_scaled, xd, kd ^ (1ull << 63));
  const fw_double s = exp2_table[k % (1u << EXP_TABLE_BITS)] + (k << (52 - EXP_TABLE_BITS));
  const fw_double p = fw_double_fma(cubic[0], r, cubic[1]);
  const fw_double r2 = fw_double_fma(r, r, zero);
  fw_double y = fw_double_fma(cubic[2], r, one);
  y = fw_double_fma(p, r2, y);
  return fw_double_to_float(fw_double_fma(y, s, zero));
}
