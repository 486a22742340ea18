/* Convolution, forward and backward, summing in the host's order (host_order.h), which
   src/kernels/kernels_conv.cpp chooses by the shape. Direct loops over the arena's
   tensors: each output element's products are taken in that order, with no im2col or
   im2row buffer. Taps that fall on the padding are left out: their product, 0, would
   change no sum. */
#include "host_order.h"
#include "kernels.h"
#include "libc.h"

/* The host's choices. Its convolutions of fewer than 10^7 multiply-adds an image with more
   than one image (images_in_parallel) go by kernel rows: one sum per kernel row ky, over
   (ci, kx), the rows' sums then added in ky order; its input gradient, for stride 1 and
   "same" padding, is the convolution of dy with the flipped weights, by kernel rows too;
   its weight gradient sums the batch in up to four groups of consecutive images. Larger
   convolutions (more than a Cortex-M4 has RAM for) and batch 1 take one GEMM over im2col:
   one sum over (ci, ky, kx), col2im's adds for the input gradient, one group. */
static int images_in_parallel(const fw_conv_shape *s) {
  const uint64_t per_image = (uint64_t)s->out_c * s->out_h * s->out_w * s->in_c * s->kernel * s->kernel;
  return s->batch > 1 && per_image < 10000000u;
}

static int input_gradient_as_convolution(const fw_conv_shape *s) {
  const int reads_input_directly = s->kernel == 1 && s->stride == 1 && s->pad == 0;
  return images_in_parallel(s) && !reads_input_directly && s->stride == 1 && 2u * s->pad + 1u == s->kernel &&
         s->in_c >= s->out_c;
}

static uint32_t image_groups(const fw_conv_shape *s) {
  return images_in_parallel(s) ? (s->batch < 4u ? s->batch : 4u) : 1u;
}

/* The input row (column) of output row (column) o and kernel row (column) k: may be outside. */
static int32_t input_at(const fw_conv_shape *s, uint32_t o, uint32_t k) {
  return (int32_t)(o * s->stride + k) - (int32_t)s->pad;
}

/* The kernel columns [*first, *end) whose input column for output column ox is inside. */
static void inside_taps(const fw_conv_shape *s, uint32_t ox, uint32_t *first, uint32_t *end) {
  const int32_t left = input_at(s, ox, 0);
  *first = left < 0 ? (uint32_t)-left : 0u;
  const int32_t room = (int32_t)s->in_w - left;
  *end = room < (int32_t)s->kernel ? (room > 0 ? (uint32_t)room : 0u) : s->kernel;
  if (*end < *first) *end = *first;
}

static const float *weight_row(const fw_conv_shape *s, const float *w, uint32_t co, uint32_t ci, uint32_t ky) {
  return w + ((co * s->in_c + ci) * s->kernel + ky) * s->kernel;
}

/* sum + kernel row ky of input channel ci's products for output (oy, ox) of image n:
   x[n, ci, iy, ix] w[co, ci, ky, kx] over the kernel columns inside, in kx order. */
static float add_row_taps(const fw_conv_shape *s, const float *x, const float *w_row, uint32_t n, uint32_t ci,
                          int32_t iy, uint32_t ox, float sum) {
  uint32_t first, end;
  inside_taps(s, ox, &first, &end);
  const float *in = x + ((n * s->in_c + ci) * s->in_h + (uint32_t)iy) * s->in_w;
  const int32_t left = input_at(s, ox, 0);
  for (uint32_t kx = first; kx < end; ++kx) sum = fw_chain(sum, w_row[kx], in[left + (int32_t)kx]);
  return sum;
}

static int row_inside(int32_t iy, uint32_t height) { return iy >= 0 && iy < (int32_t)height; }

/* Output (oy, ox) of image n and channel co, before the bias: by kernel rows, or in one sum
   over (ci, ky, kx). */
static float output_sum(const fw_conv_shape *s, int by_kernel_rows, const float *x, const float *w, uint32_t n,
                        uint32_t co, uint32_t oy, uint32_t ox) {
  float sum = 0.0f;
  if (!by_kernel_rows) {
    for (uint32_t ci = 0; ci < s->in_c; ++ci)
      for (uint32_t ky = 0; ky < s->kernel; ++ky) {
        const int32_t iy = input_at(s, oy, ky);
        if (row_inside(iy, s->in_h)) sum = add_row_taps(s, x, weight_row(s, w, co, ci, ky), n, ci, iy, ox, sum);
      }
    return sum;
  }
  for (uint32_t ky = 0; ky < s->kernel; ++ky) {
    const int32_t iy = input_at(s, oy, ky);
    float row = 0.0f;
    if (row_inside(iy, s->in_h))
      for (uint32_t ci = 0; ci < s->in_c; ++ci) row = add_row_taps(s, x, weight_row(s, w, co, ci, ky), n, ci, iy, ox, row);
    sum = ky == 0 ? row : sum + row;
  }
  return sum;
}

void fw_conv2d_forward(const fw_conv_shape *s, const float *x, const float *w, const float *b, float *y) {
  const int by_kernel_rows = images_in_parallel(s) && s->kernel > 1u;
  float *out = y;
  for (uint32_t plane = 0; plane < s->batch * s->out_c; ++plane) { /* image n, channel co */
    const uint32_t n = plane / s->out_c, co = plane % s->out_c;
    for (uint32_t oy = 0; oy < s->out_h; ++oy)
      for (uint32_t ox = 0; ox < s->out_w; ++ox) {
        const float sum = output_sum(s, by_kernel_rows, x, w, n, co, oy, ox);
        *out++ = b ? sum + b[co] : sum;
      }
  }
}

/* dx[n, ci, iy, ix] of a stride-1, "same" convolution as the host takes it: the convolution
   of dy with the kernel flipped in space (row r, column c of the flipped kernel is
   w[co, ci, k-1-r, k-1-c] and reads dy at (iy + r - pad, ix + c - pad)), by its kernel rows
   r, each over (co, c). */
static float flipped_convolution_sum(const fw_conv_shape *s, const float *dy, const float *w, uint32_t n, uint32_t ci,
                                     uint32_t iy, uint32_t ix) {
  const uint32_t k = s->kernel;
  float sum = 0.0f;
  for (uint32_t r = 0; r < k; ++r) {
    const int32_t oy = (int32_t)(iy + r) - (int32_t)s->pad;
    float row = 0.0f;
    if (row_inside(oy, s->out_h))
      for (uint32_t co = 0; co < s->out_c; ++co) {
        const float *grad = dy + ((n * s->out_c + co) * s->out_h + (uint32_t)oy) * s->out_w;
        const float *w_row = weight_row(s, w, co, ci, k - 1u - r);
        for (uint32_t c = 0; c < k; ++c) {
          const int32_t ox = (int32_t)(ix + c) - (int32_t)s->pad;
          if (ox >= 0 && ox < (int32_t)s->out_w) row = fw_chain(row, w_row[k - 1u - c], grad[ox]);
        }
      }
    sum = r == 0 ? row : sum + row;
  }
  return sum;
}

static void backward_input_as_convolution(const fw_conv_shape *s, const float *dy, const float *w, float *dx) {
  float *out = dx;
  for (uint32_t plane = 0; plane < s->batch * s->in_c; ++plane) /* image n, channel ci */
    for (uint32_t iy = 0; iy < s->in_h; ++iy)
      for (uint32_t ix = 0; ix < s->in_w; ++ix)
        *out++ = flipped_convolution_sum(s, dy, w, plane / s->in_c, plane % s->in_c, iy, ix);
}

/* dx as the host's GEMM W^T dy and col2im: column (ci, ky, kx) of output (oy, ox) is the sum
   over co of w[co, ci, ky, kx] dy[n, co, oy, ox], added to the input it came from, in
   (ky, kx, oy, ox) order per input channel. */
static void backward_input_by_columns(const fw_conv_shape *s, const float *dy, const float *w, float *dx) {
  const uint32_t in_plane = s->in_h * s->in_w, out_plane = s->out_h * s->out_w, taps = s->kernel * s->kernel;
  memset(dx, 0, s->batch * s->in_c * in_plane * sizeof(float));
  for (uint32_t n = 0; n < s->batch; ++n)
    for (uint32_t ci = 0; ci < s->in_c; ++ci) {
      float *plane = dx + (n * s->in_c + ci) * in_plane;
      for (uint32_t ky = 0; ky < s->kernel; ++ky)
        for (uint32_t kx = 0; kx < s->kernel; ++kx)
          for (uint32_t oy = 0; oy < s->out_h; ++oy) {
            const int32_t iy = input_at(s, oy, ky);
            if (!row_inside(iy, s->in_h)) continue;
            for (uint32_t ox = 0; ox < s->out_w; ++ox) {
              const int32_t ix = input_at(s, ox, kx);
              if (ix < 0 || ix >= (int32_t)s->in_w) continue;
              float column = 0.0f;
              for (uint32_t co = 0; co < s->out_c; ++co)
                column = fw_chain(column, w[(co * s->in_c + ci) * taps + ky * s->kernel + kx],
                                  dy[(n * s->out_c + co) * out_plane + oy * s->out_w + ox]);
              plane[(uint32_t)iy * s->in_w + (uint32_t)ix] += column;
            }
          }
    }
}

void fw_conv2d_backward_input(const fw_conv_shape *s, const float *dy, const float *w, float *dx) {
  if (input_gradient_as_convolution(s)) backward_input_as_convolution(s, dy, w, dx);
  else backward_input_by_columns(s, dy, w, dx);
}

/* One image's dw[co, ci, ky, kx]: the sum over the output positions p = oy out_w + ox of
   dy[n, co, p] x[n, ci, iy, ix] (the host's GEMM with K = positions: 16 lanes). */
static float image_weight_gradient(const fw_conv_shape *s, const float *dy, const float *x, uint32_t n, uint32_t co,
                                   uint32_t ci, uint32_t ky, uint32_t kx) {
  const float *grad = dy + (n * s->out_c + co) * s->out_h * s->out_w;
  const float *plane = x + (n * s->in_c + ci) * s->in_h * s->in_w;
  fw_lanes lanes;
  fw_lanes_clear(&lanes);
  for (uint32_t oy = 0; oy < s->out_h; ++oy) {
    const int32_t iy = input_at(s, oy, ky);
    if (!row_inside(iy, s->in_h)) continue;
    for (uint32_t ox = 0; ox < s->out_w; ++ox) {
      const int32_t ix = input_at(s, ox, kx);
      if (ix >= 0 && ix < (int32_t)s->in_w)
        fw_lanes_add(&lanes, oy * s->out_w + ox, grad[oy * s->out_w + ox], plane[(uint32_t)iy * s->in_w + (uint32_t)ix]);
    }
  }
  return fw_lanes_total(&lanes);
}

/* dw[co, ci, ky, kx] over the batch: each group's images in order, then the groups' sums in
   group order. */
static float batch_weight_gradient(const fw_conv_shape *s, const float *dy, const float *x, uint32_t co, uint32_t ci,
                                   uint32_t ky, uint32_t kx) {
  const uint32_t groups = image_groups(s);
  float total = 0.0f;
  for (uint32_t g = 0; g < groups; ++g) {
    const uint32_t first = g * s->batch / groups, end = (g + 1u) * s->batch / groups;
    float group = 0.0f;
    for (uint32_t n = first; n < end; ++n) {
      const float image = image_weight_gradient(s, dy, x, n, co, ci, ky, kx);
      group = n == first ? image : group + image;
    }
    total = g == 0 ? group : total + group;
  }
  return total;
}

void fw_conv2d_backward_params(const fw_conv_shape *s, const float *dy, const float *x, float *dw, float *db) {
  const uint32_t out_plane = s->out_h * s->out_w;
  float *out = dw;
  for (uint32_t co = 0; co < s->out_c; ++co)
    for (uint32_t ci = 0; ci < s->in_c; ++ci)
      for (uint32_t ky = 0; ky < s->kernel; ++ky)
        for (uint32_t kx = 0; kx < s->kernel; ++kx) *out++ = batch_weight_gradient(s, dy, x, co, ci, ky, kx);
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
