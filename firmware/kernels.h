/* fp32 forward and backward kernels of the operators the firmware runs, NCHW, row-major,
   the math of poet's host kernels (src/kernels/) without their im2col scratch: direct
   loops, so that no buffer beyond the arena's is needed. Each computes as the host's, bit
   for bit on an AVX-512 host: the convolution and the linear layer (kernels_conv.c,
   kernels_linear.c) add their products in the host's order (host_order.h), the softmax
   (kernels.c, with the rest) takes the host's expf and double sum (host_double.h). */
#ifndef FW_KERNELS_H
#define FW_KERNELS_H

#include <stdint.h>

typedef struct {
  uint32_t batch, in_c, in_h, in_w, out_c, out_h, out_w, kernel, stride, pad;
} fw_conv_shape; /* also pooling's, with in_c == out_c */

void fw_conv2d_forward(const fw_conv_shape *s, const float *x, const float *w, const float *b, float *y);
void fw_conv2d_backward_input(const fw_conv_shape *s, const float *dy, const float *w, float *dx);
/* Overwrites dw and db (db null: no bias). */
void fw_conv2d_backward_params(const fw_conv_shape *s, const float *dy, const float *x, float *dw, float *db);

/* y [rows, out] = x [rows, in] W^T [out, in] + b */
void fw_linear_forward(uint32_t rows, uint32_t in, uint32_t out, const float *x, const float *w, const float *b,
                       float *y);
void fw_linear_backward_input(uint32_t rows, uint32_t in, uint32_t out, const float *dy, const float *w, float *dx);
void fw_linear_backward_params(uint32_t rows, uint32_t in, uint32_t out, const float *dy, const float *x, float *dw,
                               float *db);

void fw_relu_forward(uint32_t n, const float *x, float *y);
/* What ReLU's backward keeps of its output: bit i % 8 of byte i / 8 set where y > 0 (exactly
   where x > 0); (n + 7) / 8 bytes. */
void fw_relu_mask(uint32_t n, const float *y, uint8_t *mask);
/* dx = dy where the mask's bit is set, else 0. */
void fw_relu_backward(uint32_t n, const float *dy, const uint8_t *mask, float *dx);

void fw_max_pool_forward(const fw_conv_shape *s, const float *x, float *y);
/* What max-pool's backward keeps of x: per output, the position of its window's first
   maximum within the window, (iy - top) * kernel + (ix - left), (top, left) being the
   window's corner with the padding (windows up to 16x16: a byte). */
void fw_max_pool_indices(const fw_conv_shape *s, const float *x, uint8_t *indices);
/* Routes each dy to its window's maximum. */
void fw_max_pool_backward(const fw_conv_shape *s, const float *dy, const uint8_t *indices, float *dx);

void fw_copy(uint32_t n, const float *from, float *to);

/* Probabilities of each row; returns the mean loss, adds the rows predicted right to
   *correct. */
float fw_softmax_cross_entropy_forward(uint32_t rows, uint32_t cols, const float *logits, const int32_t *labels,
                                       float *probabilities, uint32_t *correct);
/* d logits = (p - one-hot(label)) / rows */
void fw_softmax_cross_entropy_backward(uint32_t rows, uint32_t cols, const float *probabilities,
                                       const int32_t *labels, float *dlogits);

void fw_sgd(uint32_t n, float learning_rate, const float *gradient, float *parameters);

#endif
