#include "kernels.h"

#include "host_double.h"
#include "libc.h"

void fw_relu_forward(uint32_t n, const float *x, float *y) {
  for (uint32_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void fw_relu_mask(uint32_t n, const float *y, uint8_t *mask) {
  for (uint32_t byte = 0; byte < (n + 7u) / 8u; ++byte) {
    uint32_t bits = 0;
    for (uint32_t k = 0; k < 8u && 8u * byte + k < n; ++k) bits |= (y[8u * byte + k] > 0.0f ? 1u : 0u) << k;
    mask[byte] = (uint8_t)bits;
  }
}

void fw_relu_backward(uint32_t n, const float *dy, const uint8_t *mask, float *dx) {
  for (uint32_t i = 0; i < n; ++i) dx[i] = (mask[i / 8u] >> (i % 8u)) & 1u ? dy[i] : 0.0f;
}

/* The first row (column) of output row (column) o's window, counting the padding. */
static int32_t window_start(const fw_conv_shape *s, uint32_t o) { return (int32_t)(o * s->stride) - (int32_t)s->pad; }

/* The plane index of the first maximum of output (oy, ox)'s window, clipped to the image. */
static uint32_t window_argmax(const fw_conv_shape *s, const float *plane, uint32_t oy, uint32_t ox) {
  const int32_t top = window_start(s, oy), left = window_start(s, ox);
  const int32_t y0 = top < 0 ? 0 : top, x0 = left < 0 ? 0 : left;
  int32_t y1 = top + (int32_t)s->kernel, x1 = left + (int32_t)s->kernel;
  if (y1 > (int32_t)s->in_h) y1 = (int32_t)s->in_h;
  if (x1 > (int32_t)s->in_w) x1 = (int32_t)s->in_w;
  uint32_t best = (uint32_t)(y0 * (int32_t)s->in_w + x0);
  for (int32_t iy = y0; iy < y1; ++iy)
    for (int32_t ix = x0; ix < x1; ++ix) {
      const uint32_t at = (uint32_t)(iy * (int32_t)s->in_w + ix);
      if (plane[at] > plane[best]) best = at;
    }
  return best;
}

void fw_max_pool_forward(const fw_conv_shape *s, const float *x, float *y) {
  const uint32_t in_plane = s->in_h * s->in_w;
  for (uint32_t p = 0; p < s->batch * s->in_c; ++p)
    for (uint32_t oy = 0; oy < s->out_h; ++oy)
      for (uint32_t ox = 0; ox < s->out_w; ++ox) {
        const float *plane = x + p * in_plane;
        y[(p * s->out_h + oy) * s->out_w + ox] = plane[window_argmax(s, plane, oy, ox)];
      }
}

void fw_max_pool_indices(const fw_conv_shape *s, const float *x, uint8_t *indices) {
  const uint32_t in_plane = s->in_h * s->in_w;
  for (uint32_t p = 0; p < s->batch * s->in_c; ++p)
    for (uint32_t oy = 0; oy < s->out_h; ++oy)
      for (uint32_t ox = 0; ox < s->out_w; ++ox) {
        const int32_t at = (int32_t)window_argmax(s, x + p * in_plane, oy, ox);
        const int32_t iy = at / (int32_t)s->in_w, ix = at % (int32_t)s->in_w;
        indices[(p * s->out_h + oy) * s->out_w + ox] =
            (uint8_t)((iy - window_start(s, oy)) * (int32_t)s->kernel + ix - window_start(s, ox));
      }
}

void fw_max_pool_backward(const fw_conv_shape *s, const float *dy, const uint8_t *indices, float *dx) {
  const uint32_t in_plane = s->in_h * s->in_w;
  memset(dx, 0, s->batch * s->in_c * in_plane * sizeof(float));
  for (uint32_t p = 0; p < s->batch * s->in_c; ++p)
    for (uint32_t oy = 0; oy < s->out_h; ++oy)
      for (uint32_t ox = 0; ox < s->out_w; ++ox) {
        const uint32_t out = (p * s->out_h + oy) * s->out_w + ox, k = indices[out];
        const int32_t iy = window_start(s, oy) + (int32_t)(k / s->kernel);
        const int32_t ix = window_start(s, ox) + (int32_t)(k % s->kernel);
        dx[p * in_plane + (uint32_t)(iy * (int32_t)s->in_w + ix)] += dy[out];
      }
}

void fw_copy(uint32_t n, const float *from, float *to) { memcpy(to, from, n * sizeof(float)); }

float fw_softmax_cross_entropy_forward(uint32_t rows, uint32_t cols, const float *logits, const int32_t *labels,
                                       float *probabilities, uint32_t *correct) {
  float total = 0.0f;
  for (uint32_t r = 0; r < rows; ++r) {
    const float *in = logits + r * cols;
    float *p = probabilities + r * cols;
    float max = in[0];
    for (uint32_t j = 1; j < cols; ++j) max = in[j] > max ? in[j] : max;
    /* As the host's softmax_row: glibc's expf, the exponentials summed in double, the
       reciprocal of the sum rounded to double and then to float (host_double.h). */
    fw_double sum = 0; /* +0.0 */
    for (uint32_t j = 0; j < cols; ++j) {
      p[j] = fw_host_expf(in[j] - max);
      sum = fw_double_add(sum, fw_double_from_float(p[j]));
    }
    const float inv = fw_double_to_float(fw_double_reciprocal(sum));
    uint32_t best = 0;
    for (uint32_t j = 0; j < cols; ++j) {
      p[j] *= inv;
      if (p[j] > p[best]) best = j;
    }
    *correct += best == (uint32_t)labels[r];
    /* -log p_label from the logits (log-sum-exp): a rounded probability may be 0. Only
       reported, so in float (the host's is in double). */
    total += max + fw_logf(fw_double_to_float(sum)) - in[labels[r]];
  }
  return total / (float)rows;
}

void fw_softmax_cross_entropy_backward(uint32_t rows, uint32_t cols, const float *probabilities,
                                       const int32_t *labels, float *dlogits) {
  const float scale = 1.0f / (float)rows;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < cols; ++j) {
      const float target = j == (uint32_t)labels[r] ? 1.0f : 0.0f;
      dlogits[r * cols + j] = (probabilities[r * cols + j] - target) * scale;
    }
}

void fw_sgd(uint32_t n, float learning_rate, const float *gradient, float *parameters) {
  for (uint32_t i = 0; i < n; ++i) parameters[i] -= learning_rate * gradient[i];
}
