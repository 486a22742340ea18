#include "kernels.h"

#include "libc.h"

/* The output columns ox whose input column ox * stride - pad + kx lies in [0, in_w). */
static void valid_columns(const fw_conv_shape *s, uint32_t kx, uint32_t *first, uint32_t *end) {
  int32_t lo = 0, hi = (int32_t)s->out_w;
  while (lo < hi && (int32_t)(lo * s->stride + kx) - (int32_t)s->pad < 0) ++lo;
  while (hi > lo && (int32_t)((hi - 1) * s->stride + kx) - (int32_t)s->pad >= (int32_t)s->in_w) --hi;
  *first = (uint32_t)lo;
  *end = (uint32_t)hi;
}

/* Calls body(oy, iy) for the output rows whose input row oy * stride - pad + ky is inside. */
#define FOR_VALID_ROWS(s, ky, oy, iy)                                                      \
  for (uint32_t oy = 0; oy < (s)->out_h; ++oy)                                             \
    for (int32_t iy = (int32_t)(oy * (s)->stride + (ky)) - (int32_t)(s)->pad; iy >= 0 && \
                                                                           iy < (int32_t)(s)->in_h; iy = -1)

void fw_conv2d_forward(const fw_conv_shape *s, const float *x, const float *w, const float *b, float *y) {
  const uint32_t in_plane = s->in_h * s->in_w, out_plane = s->out_h * s->out_w, k = s->kernel;
  for (uint32_t n = 0; n < s->batch; ++n) {
    for (uint32_t co = 0; co < s->out_c; ++co) {
      float *out = y + (n * s->out_c + co) * out_plane;
      memset(out, 0, out_plane * sizeof(float));
      /* Summed over (ci, ky, kx) in that order, as the host's GEMM over im2col's rows. */
      for (uint32_t ci = 0; ci < s->in_c; ++ci) {
        const float *plane = x + (n * s->in_c + ci) * in_plane;
        const float *wk = w + (co * s->in_c + ci) * k * k;
        for (uint32_t ky = 0; ky < k; ++ky)
          for (uint32_t kx = 0; kx < k; ++kx) {
            const float weight = wk[ky * k + kx];
            uint32_t first, end;
            valid_columns(s, kx, &first, &end);
            FOR_VALID_ROWS(s, ky, oy, iy) {
              const float *in_row = plane + (uint32_t)iy * s->in_w;
              float *out_row = out + oy * s->out_w;
              for (uint32_t ox = first; ox < end; ++ox) out_row[ox] += weight * in_row[ox * s->stride + kx - s->pad];
            }
          }
      }
      if (b)
        for (uint32_t i = 0; i < out_plane; ++i) out[i] += b[co];
    }
  }
}

void fw_conv2d_backward_input(const fw_conv_shape *s, const float *dy, const float *w, float *dx) {
  const uint32_t in_plane = s->in_h * s->in_w, out_plane = s->out_h * s->out_w, k = s->kernel;
  memset(dx, 0, s->batch * s->in_c * in_plane * sizeof(float));
  for (uint32_t n = 0; n < s->batch; ++n)
    for (uint32_t ci = 0; ci < s->in_c; ++ci) {
      float *plane = dx + (n * s->in_c + ci) * in_plane;
      for (uint32_t co = 0; co < s->out_c; ++co) {
        const float *grad = dy + (n * s->out_c + co) * out_plane;
        const float *wk = w + (co * s->in_c + ci) * k * k;
        for (uint32_t ky = 0; ky < k; ++ky)
          for (uint32_t kx = 0; kx < k; ++kx) {
            const float weight = wk[ky * k + kx];
            uint32_t first, end;
            valid_columns(s, kx, &first, &end);
            FOR_VALID_ROWS(s, ky, oy, iy) {
              float *in_row = plane + (uint32_t)iy * s->in_w;
              const float *grad_row = grad + oy * s->out_w;
              for (uint32_t ox = first; ox < end; ++ox) in_row[ox * s->stride + kx - s->pad] += weight * grad_row[ox];
            }
          }
      }
    }
}

void fw_conv2d_backward_params(const fw_conv_shape *s, const float *dy, const float *x, float *dw, float *db) {
  const uint32_t in_plane = s->in_h * s->in_w, out_plane = s->out_h * s->out_w, k = s->kernel;
  for (uint32_t co = 0; co < s->out_c; ++co)
    for (uint32_t ci = 0; ci < s->in_c; ++ci)
      for (uint32_t ky = 0; ky < k; ++ky)
        for (uint32_t kx = 0; kx < k; ++kx) {
          uint32_t first, end;
          valid_columns(s, kx, &first, &end);
          float sum = 0.0f;
          for (uint32_t n = 0; n < s->batch; ++n) {
            const float *plane = x + (n * s->in_c + ci) * in_plane;
            const float *grad = dy + (n * s->out_c + co) * out_plane;
            FOR_VALID_ROWS(s, ky, oy, iy) {
              const float *in_row = plane + (uint32_t)iy * s->in_w;
              const float *grad_row = grad + oy * s->out_w;
              for (uint32_t ox = first; ox < end; ++ox) sum += grad_row[ox] * in_row[ox * s->stride + kx - s->pad];
            }
          }
          dw[((co * s->in_c + ci) * k + ky) * k + kx] = sum;
        }
  if (!db) return;
  for (uint32_t co = 0; co < s->out_c; ++co) {
    float total = 0.0f;
    for (uint32_t n = 0; n < s->batch; ++n) {
      const float *grad = dy + (n * s->out_c + co) * out_plane;
      float sum = 0.0f;
      for (uint32_t i = 0; i < out_plane; ++i) sum += grad[i];
      total += sum;
    }
    db[co] = total;
  }
}

void fw_linear_forward(uint32_t rows, uint32_t in, uint32_t out, const float *x, const float *w, const float *b,
                       float *y) {
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t o = 0; o < out; ++o) {
      const float *xr = x + r * in, *wo = w + o * in;
      float sum = 0.0f;
      for (uint32_t i = 0; i < in; ++i) sum += xr[i] * wo[i];
      y[r * out + o] = b ? sum + b[o] : sum;
    }
}

void fw_linear_backward_input(uint32_t rows, uint32_t in, uint32_t out, const float *dy, const float *w, float *dx) {
  for (uint32_t r = 0; r < rows; ++r) {
    float *dxr = dx + r * in;
    memset(dxr, 0, in * sizeof(float));
    for (uint32_t o = 0; o < out; ++o) {
      const float g = dy[r * out + o];
      const float *wo = w + o * in;
      for (uint32_t i = 0; i < in; ++i) dxr[i] += g * wo[i];
    }
  }
}

void fw_linear_backward_params(uint32_t rows, uint32_t in, uint32_t out, const float *dy, const float *x, float *dw,
                               float *db) {
  for (uint32_t o = 0; o < out; ++o) {
    float *dwo = dw + o * in;
    memset(dwo, 0, in * sizeof(float));
    for (uint32_t r = 0; r < rows; ++r) {
      const float g = dy[r * out + o];
      const float *xr = x + r * in;
      for (uint32_t i = 0; i < in; ++i) dwo[i] += g * xr[i];
    }
    if (db) {
      float sum = 0.0f;
      for (uint32_t r = 0; r < rows; ++r) sum += dy[r * out + o];
      db[o] = sum;
    }
  }
}

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
    float sum = 0.0f;
    for (uint32_t j = 0; j < cols; ++j) {
      p[j] = fw_expf(in[j] - max);
      sum += p[j];
    }
    const float inv = 1.0f / sum;
    uint32_t best = 0;
    for (uint32_t j = 0; j < cols; ++j) {
      p[j] *= inv;
      if (p[j] > p[best]) best = j;
    }
    *correct += best == (uint32_t)labels[r];
    /* -log p_label from the logits (log-sum-exp): a rounded probability may be 0. */
    total += max + fw_logf(sum) - in[labels[r]];
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
