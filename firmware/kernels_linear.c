/* The linear layer, forward and backward, summing in the host's order (host_order.h):
   src/kernels/kernels_dense.cpp takes x W^T (K = in, along both operands' rows: 16 lanes),
   dy W and dy^T x (one chain each), and adds the bias afterwards. */
#include "host_order.h"
#include "kernels.h"

void fw_linear_forward(uint32_t rows, uint32_t in, uint32_t out, const float *x, const float *w, const float *b,
                       float *y) {
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t o = 0; o < out; ++o) {
      const float *xr = x + r * in, *wo = w + o * in;
      fw_lanes lanes;
      fw_lanes_clear(&lanes);
      for (uint32_t i = 0; i < in; ++i) fw_lanes_add(&lanes, i, xr[i], wo[i]);
      const float sum = fw_lanes_total(&lanes);
      y[r * out + o] = b ? sum + b[o] : sum;
    }
}

void fw_linear_backward_input(uint32_t rows, uint32_t in, uint32_t out, const float *dy, const float *w, float *dx) {
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < in; ++i) {
      float sum = 0.0f;
      for (uint32_t o = 0; o < out; ++o) sum = fw_chain(sum, dy[r * out + o], w[o * in + i]);
      dx[r * in + i] = sum;
    }
}

void fw_linear_backward_params(uint32_t rows, uint32_t in, uint32_t out, const float *dy, const float *x, float *dw,
                               float *db) {
  for (uint32_t o = 0; o < out; ++o) {
    for (uint32_t i = 0; i < in; ++i) {
      float sum = 0.0f;
      for (uint32_t r = 0; r < rows; ++r) sum = fw_chain(sum, dy[r * out + o], x[r * in + i]);
      dw[o * in + i] = sum;
    }
    if (db) {
      float sum = 0.0f;
      for (uint32_t r = 0; r < rows; ++r) sum += dy[r * out + o];
      db[o] = sum;
    }
  }
}
