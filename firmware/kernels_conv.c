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
   convolutions and batch 1 take one GEMM over im2col: one sum over (ci, ky, kx), col2im's
   adds for the input gradient, one group. */
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

static const float *weight_row(const fw_conv_shape *s, const float *w, uint32_t co, uint32_t ci, uint32_t ky) {
  return w + ((co * s->in_c + ci) * s->kernel + ky) * s->kernel;
}

static int row_inside(int32_t iy, uint32_t height) { return iy >= 0 && iy < (int32_t)height; }

/* Output columns are summed up to FW_COLUMNS at a time, side by side: each keeps its own
   order of products, and the loop over them takes one weight and no bounds test (column by
   column, 100 of mcu_cnn's steps took 17.5 s in QEMU against 13.0 s). */
#define FW_COLUMNS 16u

/* How a row of outputs reads a row of inputs: output column o's tap t reads input column
   o stride + t - pad, if inside. */
typedef struct {
  uint32_t out_w, in_w, stride, pad, taps;
} fw_row_reads;

/* The output columns [*first, *end) whose tap t reads inside the input row. */
static void inside_columns(const fw_row_reads *r, uint32_t t, uint32_t *first, uint32_t *end) {
  uint32_t lo = 0, hi = r->out_w;
  while (lo < hi && (int32_t)(lo * r->stride + t) < (int32_t)r->pad) ++lo;
  while (hi > lo && (int32_t)((hi - 1u) * r->stride + t) - (int32_t)r->pad >= (int32_t)r->in_w) --hi;
  *first = lo;
  *end = hi;
}

/* acc[o - first_column] continued by the products of a row's taps in tap order, tap t's
   weight weights[t * weight_step], for the output columns [first_column, + count). */
static void add_row_taps(const fw_row_reads *r, const float *in_row, const float *weights, int32_t weight_step,
                         uint32_t first_column, uint32_t count, float *acc) {
  for (uint32_t t = 0; t < r->taps; ++t) {
    uint32_t begin, end;
    inside_columns(r, t, &begin, &end);
    if (begin < first_column) begin = first_column;
    if (end > first_column + count) end = first_column + count;
    const float weight = weights[(int32_t)t * weight_step];
    for (uint32_t o = begin; o < end; ++o)
      acc[o - first_column] = fw_chain(acc[o - first_column], weight, in_row[o * r->stride + t - r->pad]);
  }
}

/* sum[i] = sum[i] + row[i] (row i's sum after the first), or row[i] (the first). */
static void add_rows(float *sum, const float *row, uint32_t count, int first) {
  for (uint32_t i = 0; i < count; ++i) sum[i] = first ? row[i] : sum[i] + row[i];
}

/* Outputs (oy, ox0 + i), i < count, of image n and channel co, before the bias: by kernel
   rows, or in one sum over (ci, ky, kx). */
static void output_sums(const fw_conv_shape *s, int by_kernel_rows, const float *x, const float *w, uint32_t n,
                        uint32_t co, uint32_t oy, uint32_t ox0, uint32_t count, float *sum) {
  const fw_row_reads reads = {s->out_w, s->in_w, s->stride, s->pad, s->kernel};
  const float *image = x + n * s->in_c * s->in_h * s->in_w;
  for (uint32_t i = 0; i < count; ++i) sum[i] = 0.0f;
  if (!by_kernel_rows) {
    for (uint32_t ci = 0; ci < s->in_c; ++ci)
      for (uint32_t ky = 0; ky < s->kernel; ++ky) {
        const int32_t iy = input_at(s, oy, ky);
        if (row_inside(iy, s->in_h))
          add_row_taps(&reads, image + (ci * s->in_h + (uint32_t)iy) * s->in_w, weight_row(s, w, co, ci, ky), 1, ox0,
                       count, sum);
      }
    return;
  }
  float row[FW_COLUMNS];
  for (uint32_t ky = 0; ky < s->kernel; ++ky) {
    const int32_t iy = input_at(s, oy, ky);
    for (uint32_t i = 0; i < count; ++i) row[i] = 0.0f;
    for (uint32_t ci = 0; ci < s->in_c && row_inside(iy, s->in_h); ++ci)
      add_row_taps(&reads, image + (ci * s->in_h + (uint32_t)iy) * s->in_w, weight_row(s, w, co, ci, ky), 1, ox0,
                   count, row);
    add_rows(sum, row, count, ky == 0);
  }
}

void fw_conv2d_forward(const fw_conv_shape *s, const float *x, const float *w, const float *b, float *y) {
  const int by_kernel_rows = images_in_parallel(s) && s->kernel > 1u;
  float sum[FW_COLUMNS];
  float *out = y;
  for (uint32_t plane = 0; plane < s->batch * s->out_c; ++plane) { /* image n, channel co */
    const uint32_t n = plane / s->out_c, co = plane % s->out_c;
    for (uint32_t oy = 0; oy < s->out_h; ++oy)
      for (uint32_t ox0 = 0; ox0 < s->out_w; ox0 += FW_COLUMNS) {
        const uint32_t count = s->out_w - ox0 < FW_COLUMNS ? s->out_w - ox0 : FW_COLUMNS;
        output_sums(s, by_kernel_rows, x, w, n, co, oy, ox0, count, sum);
        for (uint32_t i = 0; i < count; ++i) *out++ = b ? sum[i] + b[co] : sum[i];
      }
  }
}

/* dx[n, ci, iy, ix0 + i], i < count, of a stride-1, "same" convolution as the host takes it:
   the convolution of dy with the kernel flipped in space (row r, column c of the flipped
   kernel is w[co, ci, k-1-r, k-1-c] and reads dy at (iy + r - pad, ix + c - pad)), by its
   kernel rows r, each over (co, c). */
static void flipped_convolution_sums(const fw_conv_shape *s, const float *dy, const float *w, uint32_t n,
                                     uint32_t ci, uint32_t iy, uint32_t ix0, uint32_t count, float *sum) {
  const uint32_t k = s->kernel;
  const fw_row_reads reads = {s->in_w, s->out_w, 1u, s->pad, k};
  float row[FW_COLUMNS];
  for (uint32_t r = 0; r < k; ++r) {
    const int32_t oy = (int32_t)(iy + r) - (int32_t)s->pad;
    for (uint32_t i = 0; i < count; ++i) row[i] = 0.0f;
    for (uint32_t co = 0; co < s->out_c && row_inside(oy, s->out_h); ++co) {
      const float *grad_row = dy + ((n * s->out_c + co) * s->out_h + (uint32_t)oy) * s->out_w;
      add_row_taps(&reads, grad_row, weight_row(s, w, co, ci, k - 1u - r) + (k - 1u), -1, ix0, count, row);
    }
    add_rows(sum, row, count, r == 0);
  }
}

static void backward_input_as_convolution(const fw_conv_shape *s, const float *dy, const float *w, float *dx) {
  float *out = dx;
  for (uint32_t plane = 0; plane < s->batch * s->in_c; ++plane) /* image n, channel ci */
    for (uint32_t iy = 0; iy < s->in_h; ++iy)
      for (uint32_t ix0 = 0; ix0 < s->in_w; ix0 += FW_COLUMNS) {
        const uint32_t count = s->in_w - ix0 < FW_COLUMNS ? s->in_w - ix0 : FW_COLUMNS;
        flipped_convolution_sums(s, dy, w, plane / s->in_c, plane % s->in_c, iy, ix0, count, out);
        out += count;
      }
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
  const fw_row_reads reads = {s->out_w, s->in_w, s->stride, s->pad, s->kernel};
  uint32_t first, end;
  inside_columns(&reads, kx, &first, &end);
  fw_lanes lanes;
  fw_lanes_clear(&lanes);
  for (uint32_t oy = 0; oy < s->out_h; ++oy) {
    const int32_t iy = input_at(s, oy, ky);
    if (!row_inside(iy, s->in_h)) continue;
    const float *in_row = plane + (uint32_t)iy * s->in_w, *grad_row = grad + oy * s->out_w;
    for (uint32_t ox = first; ox < end; ++ox)
      fw_lanes_add(&lanes, oy * s->out_w + ox, grad_row[ox], in_row[ox * s->stride + kx - s->pad]);
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
