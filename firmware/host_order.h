/* The order in which poet's host kernels add up a convolution's or linear layer's products,
   so that the firmware's sums round exactly as the host's (tests/firmware_parity.cpp). The
   host's products are oneDNN's sgemm (src/kernels/gemm.cpp); on an x86 CPU with AVX-512,
   oneDNN 2.6 sums them, measured bit for bit against these on mcu_cnn's shapes:
   - a product whose two operands run along K in memory (A [m, K] times B^T [K, n]: the
     linear layer's forward and every convolution's weight gradient, K being the output
     positions) in 16 lanes, product k in lane k mod 16, each lane a chain of fused
     multiply-adds from 0, and then the lanes halved: lane l + 8 into lane l, then l + 4,
     l + 2 and l + 1 (fw_lanes);
   - any other product (A B, A^T B, K the input channels x kernel columns, the output
     channels or the batch) in one chain of fused multiply-adds from 0 over k (fw_chain);
   - and a product added to what C holds (beta 1) as C + the product's sum.
   A CPU whose oneDNN kernels differ (AVX2 only: 8 lanes) rounds otherwise: the same math
   within rounding. */
#ifndef FW_HOST_ORDER_H
#define FW_HOST_ORDER_H

#include <stdint.h>

/* a * b + c rounded once: the Cortex-M4's VFMA.F32 (the build has -ffp-contract=off, so no
   other expression is fused). */
static inline float fw_chain(float c, float a, float b) { return __builtin_fmaf(a, b, c); }

typedef struct {
  float lane[16];
} fw_lanes;

static inline void fw_lanes_clear(fw_lanes *l) {
  for (uint32_t i = 0; i < 16u; ++i) l->lane[i] = 0.0f;
}

/* Product k of the sum: a * b. A product left out (a padding input, 0) changes no lane. */
static inline void fw_lanes_add(fw_lanes *l, uint32_t k, float a, float b) {
  l->lane[k % 16u] = fw_chain(l->lane[k % 16u], a, b);
}

static inline float fw_lanes_total(fw_lanes *l) {
  for (uint32_t half = 8; half >= 1; half /= 2)
    for (uint32_t i = 0; i < half; ++i) l->lane[i] = l->lane[i] + l->lane[i + half];
  return l->lane[0];
}

#endif
