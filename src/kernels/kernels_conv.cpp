// Convolution as GEMM: per image and group, an im2col buffer [K, P] (conv_columns.h; K =
// input channels of the group x kernel area, P = output positions) turns the convolution
// into W_g [Cout_g, K] x cols, its input gradient into W_g^T dY_g followed by col2im (or, for
// stride 1, into the convolution of dY with flipped weights), and its weight gradient into
// dY_g cols^T summed over the batch. Convolutions whose per-image GEMMs are small share
// their images between the threads, and go by kernel rows: an im2row buffer of the
// kernel_w horizontal shifts of each input row, and kernel_h GEMMs (by_kernel_rows). Depthwise convolutions are
// computed directly instead (conv_depthwise.h). Large 3x3 convolutions (resnet18's, one
// image at a time) go by Winograd's F(2x2, 3x3) instead, forward and both gradients
// (conv_winograd.h). Small 3x3 ones go channels-last where measured faster: their weight
// gradient on CPUs with AVX2, their forward on CPUs with AVX-512 (conv_channels_last.h). Those with few output positions an image (7x7) and too
// large to share their images take the columns of 4 images side by side, one GEMM for all
// (side_by_side_images). (oneDNN's convolution primitives were measured too and are
// not used: each execution allocates on the heap; bench/conv_onednn.cpp, docs/BENCHMARKS.md.)
#include "poet/kernels/kernels_conv.h"

#include <omp.h>

#include <algorithm>
#include <optional>

#include "conv_channels_last.h"
#include "conv_columns.h"
#include "conv_depthwise.h"
#include "conv_geometry.h"
#include "conv_winograd.h"
#include "gemm.h"
#include "kernel_checks.h"
#include "parallel_for.h"
#include "quad.h"

namespace poet::kernels {
namespace {

using detail::expect_at_least;
using detail::expect_size;
using detail::col2im_add;
using detail::ColumnRange;
using detail::depthwise_backward_input;
using detail::depthwise_backward_weight;
using detail::depthwise_forward;
using detail::gemm;
using detail::im2col;
using detail::input_plane;
using detail::inside_columns;
using detail::is_depthwise;
using detail::patch_size;
using detail::positions;
using detail::reads_input_directly;
using detail::with_column_stride;

// The [K, P] matrix of one image's group whose input starts at x: the input itself (a 1x1,
// stride 1, unpadded convolution) or its im2col, written to buffer.
const float* columns(const Conv2dShape& s, const float* x, float* buffer) {
  if (reads_input_directly(s)) return x;
  im2col(s, x, buffer);
  return buffer;
}

// Where group g of image n starts in x, y and the weights.
struct GroupOffsets {
  std::int64_t x, y, weight;
};

GroupOffsets offsets(const Conv2dShape& s, std::int64_t n, std::int64_t g) {
  const std::int64_t cin = s.in_channels_per_group(), cout = s.out_channels_per_group();
  return {(n * s.in_channels + g * cin) * input_plane(s), (n * s.out_channels + g * cout) * positions(s),
          g * cout * patch_size(s)};
}

// Images on the threads. oneDNN runs a small GEMM on one thread (gemm.h), so a convolution
// whose per-image GEMMs are small (resnet18_cifar's, lenet5's) used one thread at any
// OMP_NUM_THREADS: its images are shared between the threads instead, each thread with its
// own im2col buffer. Whether a convolution does this depends on its shape alone. Its weight
// gradient sums the batch in kImageGroups fixed groups of consecutive images (each group in
// image order, then the groups' sums in group order), whatever the thread count, so the
// bits do not depend on it. resnet18_cifar at 2 threads: see docs/BENCHMARKS.md.
constexpr std::int64_t kImageGroups = 4;

bool images_in_parallel(const Conv2dShape& s) {
  return !is_depthwise(s) && s.batch > 1 &&
         detail::gemm_runs_on_one_thread(s.out_channels_per_group(), positions(s), patch_size(s));
}

// Convolution by kernel rows (the small convolutions whose images go to the threads).
// im2col writes every input pixel kernel_h x kernel_w times; most of that is the same row
// shifted down. Here only the kernel_w horizontal shifts are written, for every row of the
// vertically padded image:
//   rows[(c, j), r, ox] = x[c, r - pad_h, ox stride_w + j - pad_w]   (0 outside the image),
// r in [0, in_h + 2 pad_h), the rows of each phase r mod stride_h stored together (row_slot).
// Output row oy of kernel row i reads row i + oy stride_h, which is slot(i) + oy: kernel row
// i's [in channels x kernel_w, positions] matrix starts at slot(i), with a row stride of the
// whole plane, and the convolution is kernel_h GEMMs with K = in channels x kernel_w added
// into y, against one GEMM with K = in channels x kernel area over the full im2col: a buffer
// kernel_h (stride 1) or kernel_h / stride times smaller to write and read (resnet18_cifar,
// lenet5: docs/BENCHMARKS.md).
// Undilated only: the rows hold each input row's kernel_w neighbouring shifts.
bool by_kernel_rows(const Conv2dShape& s) { return images_in_parallel(s) && s.kernel_h > 1 && s.dilation == 1; }

std::int64_t padded_rows(const Conv2dShape& s) { return s.in_h + 2 * s.pad_h; }
std::int64_t phase_rows(const Conv2dShape& s) { return (padded_rows(s) + s.stride_h - 1) / s.stride_h; }
std::int64_t rows_plane(const Conv2dShape& s) { return s.stride_h * phase_rows(s) * s.out_w(); }
std::int64_t row_slot(const Conv2dShape& s, std::int64_t r) { return r % s.stride_h * phase_rows(s) + r / s.stride_h; }
std::int64_t row_shifts(const Conv2dShape& s) { return s.in_channels_per_group() * s.kernel_w; }
std::int64_t kernel_rows_elements(const Conv2dShape& s) { return row_shifts(s) * rows_plane(s); }

// Kernel row i's matrix in the rows of one image's group.
const float* kernel_row_matrix(const Conv2dShape& s, const float* rows, std::int64_t i) {
  return rows + row_slot(s, i) * s.out_w();
}

void im2row(const Conv2dShape& s, const float* x, float* rows) {
  const std::int64_t ow = s.out_w(), plane = rows_plane(s);
  for (std::int64_t c = 0; c < s.in_channels_per_group(); ++c) {
    const float* in = x + c * input_plane(s);
    for (int j = 0; j < s.kernel_w; ++j) {
      float* out = rows + (c * s.kernel_w + j) * plane;
      const ColumnRange inside = inside_columns(s, j);
      if (s.stride_h > 1 || s.stride_w > 1) {
        // Slots past a phase's rows (a phase with fewer rows) are zeroed: no kernel row reads
        // them, but the stacked weight gradient multiplies them by zeros, which must not
        // meet a NaN.
        for (std::int64_t phase = 0; phase < s.stride_h; ++phase) {
          const std::int64_t rows_of_phase = (padded_rows(s) - phase + s.stride_h - 1) / s.stride_h;
          std::fill(out + (phase * phase_rows(s) + rows_of_phase) * ow, out + (phase + 1) * phase_rows(s) * ow, 0.0f);
        }
        for (std::int64_t r = 0; r < padded_rows(s); ++r) {
          float* out_row = out + row_slot(s, r) * ow;
          const std::int64_t iy = r - s.pad_h;
          if (iy < 0 || iy >= s.in_h) {
            std::fill(out_row, out_row + ow, 0.0f);
            continue;
          }
          const float* in_row = in + iy * s.in_w + j - s.pad_w;  // the input of ox = 0
          for (std::int64_t ox = 0; ox < inside.begin; ++ox) out_row[ox] = 0.0f;
          with_column_stride(s, [&](auto stride) {
            for (std::int64_t ox = inside.begin; ox < inside.end; ++ox) out_row[ox] = in_row[ox * stride];
          });
          for (std::int64_t ox = inside.end; ox < ow; ++ox) out_row[ox] = 0.0f;
        }
        continue;
      }
      std::fill(out, out + s.pad_h * ow, 0.0f);
      float* image = out + s.pad_h * ow;
      if (ow == s.in_w) {
        // As many output as input columns: the image rows are the plane shifted by j - pad_w,
        // one copy; then the columns that wrapped into the neighbouring row are zeroed.
        const std::int64_t shift = j - s.pad_w, area = input_plane(s);
        const std::int64_t copy_begin = std::max<std::int64_t>(0, -shift), copy_end = std::min(area, area - shift);
        std::fill(image, image + copy_begin, 0.0f);
        std::copy(in + copy_begin + shift, in + copy_end + shift, image + copy_begin);
        std::fill(image + copy_end, image + area, 0.0f);
        for (std::int64_t iy = 0; iy < s.in_h; ++iy) {
          for (std::int64_t ox = 0; ox < inside.begin; ++ox) image[iy * ow + ox] = 0.0f;
          for (std::int64_t ox = inside.end; ox < ow; ++ox) image[iy * ow + ox] = 0.0f;
        }
      } else {
        for (std::int64_t iy = 0; iy < s.in_h; ++iy) {
          float* out_row = image + iy * ow;
          const float* in_row = in + iy * s.in_w + j - s.pad_w;  // the input of ox = 0
          for (std::int64_t ox = 0; ox < inside.begin; ++ox) out_row[ox] = 0.0f;
          for (std::int64_t ox = inside.begin; ox < inside.end; ++ox) out_row[ox] = in_row[ox];
          for (std::int64_t ox = inside.end; ox < ow; ++ox) out_row[ox] = 0.0f;
        }
      }
      std::fill(out + (s.in_h + s.pad_h) * ow, out + plane, 0.0f);
    }
  }
}

// by_row[g][i][co][(ci, j)] = weight[g cout + co][ci][i][j]: kernel row i's [out channels,
// in channels x kernel_w] matrix of each group.
void weights_by_kernel_row(const Conv2dShape& s, const float* weight, float* by_row) {
  const std::int64_t cin = s.in_channels_per_group(), cout = s.out_channels_per_group(), kw = s.kernel_w;
  for (std::int64_t g = 0; g < s.groups; ++g)
    for (std::int64_t co = 0; co < cout; ++co)
      for (std::int64_t ci = 0; ci < cin; ++ci)
        for (std::int64_t i = 0; i < s.kernel_h; ++i)
          for (std::int64_t j = 0; j < kw; ++j)
            by_row[((g * s.kernel_h + i) * cout + co) * cin * kw + ci * kw + j] =
                weight[(((g * cout + co) * cin + ci) * s.kernel_h + i) * kw + j];
}

// y = the convolution of group g of one image (x, y at the group), from its rows (im2row).
void convolve_by_kernel_rows(const Conv2dShape& s, const float* by_row, std::int64_t g, const float* rows,
                             float* y) {
  const std::int64_t cout = s.out_channels_per_group(), k = row_shifts(s);
  for (std::int64_t i = 0; i < s.kernel_h; ++i)
    gemm(false, false, cout, positions(s), k, 1.0f, by_row + (g * s.kernel_h + i) * cout * k, k,
         kernel_row_matrix(s, rows, i), rows_plane(s), i == 0 ? 0.0f : 1.0f, y, positions(s));
}

// A stride-1 convolution's input gradient is the convolution of dy with the weights
// flipped in space and their input and output channels swapped, padded by kernel - 1 - pad
// (swapped_channels). As im2col (or im2row) of dy and GEMMs with K = output channels x
// kernel area, that replaces a GEMM with K = output channels followed by col2im's
// scattered adds (resnet18_cifar's 16 -> 16 channels at 32x32, batch 32, one thread: 2.2
// -> 1.1 ms over im2col, 0.77 ms by kernel rows). Only for "same" padding and no more
// output than input channels: its first layer, 3 -> 16, took 0.45 -> 0.82 ms over im2col
// (dy's im2col the larger), 0.32 ms by kernel rows, but lenet5's unpadded 6 -> 16 5x5
// 0.27 -> 0.29 ms at one thread and 0.19 -> 0.26 ms at two. Only for the small
// convolutions whose images go to the threads, where it was measured.
bool input_gradient_as_convolution(const Conv2dShape& s) {
  return images_in_parallel(s) && !reads_input_directly(s) && s.stride_h == 1 && s.stride_w == 1 &&
         s.dilation == 1 && 2 * s.pad_h == s.kernel_h - 1 && 2 * s.pad_w == s.kernel_w - 1 &&
         s.in_channels_per_group() >= s.out_channels_per_group();
}

// The convolution that gives a stride-1 convolution's input gradient: over dy, channels
// swapped, padded by kernel - 1 - pad (the same padding for "same" convolutions).
Conv2dShape swapped_channels(const Conv2dShape& s) {
  Conv2dShape t = s;
  t.in_channels = s.out_channels;
  t.out_channels = s.in_channels;
  t.in_h = s.out_h();
  t.in_w = s.out_w();
  t.pad_h = s.kernel_h - 1 - s.pad_h;
  t.pad_w = s.kernel_w - 1 - s.pad_w;
  t.bias = false;
  return t;
}

// flipped[g][ci][(co, i, j)] = weight[g cout + co][ci][kh - 1 - i][kw - 1 - j]: per group the
// [in channels, out channels x kernel area] matrix the input gradient multiplies by.
void flip_weights(const Conv2dShape& s, const float* weight, float* flipped) {
  const std::int64_t cin = s.in_channels_per_group(), cout = s.out_channels_per_group(),
                     taps = s.kernel_h * s.kernel_w;
  for (std::int64_t g = 0; g < s.groups; ++g)
    for (std::int64_t ci = 0; ci < cin; ++ci)
      for (std::int64_t co = 0; co < cout; ++co) {
        const float* from = weight + ((g * cout + co) * cin + ci) * taps;
        float* to = flipped + ((g * cin + ci) * cout + co) * taps;
        for (std::int64_t t = 0; t < taps; ++t) to[t] = from[taps - 1 - t];
      }
}

std::int64_t image_groups(const Conv2dShape& s) {
  return images_in_parallel(s) ? std::min(s.batch, kImageGroups) : 1;
}

// The weight gradient by kernel rows: kernel_h GEMMs with K = positions, each reading dy
// again, against one over the im2col. Faster with few input channels (one thread, batch
// 32: 3 -> 16 channels at 32x32 0.49 -> 0.26 ms, lenet5's 1 -> 6 0.20 -> 0.13 ms), slower
// from 16 (16 -> 16: 1.40 -> 1.59 ms; 64 -> 64 at 8x8: 1.01 -> 1.34 ms).
bool weight_gradient_by_kernel_rows(const Conv2dShape& s) {
  return by_kernel_rows(s) && s.in_channels_per_group() < 16;
}

// The weight gradient by stacked kernel rows, from 16 input channels (where the product per
// kernel row above was slower than one over the im2col) to fewer than 32 output channels
// (where oneDNN's product over the im2col has 16 columns, its slowest: one thread, batch 32,
// loaded machine, resnet18_cifar's 16 -> 16 at 32x32 2.84 -> 2.07 ms; with 32 or 64
// output channels slower, 32 -> 32 at 16x16 1.83 -> 1.92 ms, 64 -> 64 at 8x8 1.76 -> 2.38
// ms, 32 -> 64 stride 2 1.23 -> 1.65 ms). Kernel row i = phase + stride q
// reads the rows of its phase (im2row) from slot q on: its gradient [out channels, in
// channels x kernel_w] is dY shifted down q rows times those rows, transposed. The kernel
// rows of a phase are taken in one product: the phase's rows times dY shifted down q rows
// for each q side by side (the stack, add_weight_gradient_stacked): in channels x kernel_w
// by kernel rows x out channels, summed over the phase's positions. That replaces
// the im2col (kernel area copies of x) by im2row and the stack (kernel_w copies of x,
// kernel_h of dY), and oneDNN's product with 16 rows or columns by a squarer one.
// The sum keeps the kernel rows in phase order (stacked_position).
bool weight_gradient_stacked(const Conv2dShape& s) {
  return by_kernel_rows(s) && s.in_channels_per_group() >= 16 && s.out_channels_per_group() < 32;
}

std::int64_t phases(const Conv2dShape& s) { return std::min<std::int64_t>(s.stride_h, s.kernel_h); }
std::int64_t kernel_rows_in_phase(const Conv2dShape& s, std::int64_t phase) {
  return (s.kernel_h - phase + s.stride_h - 1) / s.stride_h;
}
std::int64_t stacked_position(const Conv2dShape& s, std::int64_t i) {
  std::int64_t position = i / s.stride_h;
  for (std::int64_t phase = 0; phase < i % s.stride_h; ++phase) position += kernel_rows_in_phase(s, phase);
  return position;
}
std::int64_t stack_elements(const Conv2dShape& s) {
  return s.kernel_h * s.out_channels_per_group() * phase_rows(s) * s.out_w();
}

// The weight gradient as dW^T [K, Cout_g] = cols dY^T rather than dY cols^T: oneDNN's sgemm
// is slow with few rows (at Cout 16, K 144, 1,024 positions: 60 us against 28 us an image,
// one thread; Cout 32: 23 against 20 us; Cout 64: equal; Cout 6, K 25: 2 against 7 us), so
// for the small convolutions with 16 to 63 output channels, fewer than K, the products are
// taken transposed, summed, and transposed once at the end. dY is transposed first, into
// the worker's buffer after the im2col (dy_transposed_elements): the product is then
// cols dYt, both operands as oneDNN's sgemm reads them fastest (one thread, loaded
// machine: K 288, Cout 32, 256 positions 43.7 -> 40.4 us, K 144 23.6 -> 20.3 us; a Quad
// transposition of dY about 1 us).
bool weight_gradient_transposed(const Conv2dShape& s) {
  const std::int64_t cout = s.out_channels_per_group();
  return images_in_parallel(s) && !weight_gradient_stacked(s) && cout >= 16 && cout < 64 && cout < patch_size(s);
}

std::int64_t dy_transposed_elements(const Conv2dShape& s) {
  return weight_gradient_transposed(s) ? s.out_channels_per_group() * positions(s) : 0;
}

// One worker's buffer: x's im2col or im2row (forward, weight gradient), and dy's
// (input_gradient_as_convolution) or the columns col2im reads (input gradient).
std::int64_t patches_elements(const Conv2dShape& s) {
  if (reads_input_directly(s)) return 0;
  const std::int64_t columns = patch_size(s) * positions(s);
  const Conv2dShape t = swapped_channels(s);
  if (!by_kernel_rows(s)) {
    return input_gradient_as_convolution(s) ? std::max(columns, patch_size(t) * positions(t)) : columns;
  }
  const std::int64_t input_gradient = input_gradient_as_convolution(s) ? kernel_rows_elements(t) : columns;
  const std::int64_t weight_gradient = weight_gradient_by_kernel_rows(s) ? kernel_rows_elements(s)
                                       : weight_gradient_stacked(s)      ? kernel_rows_elements(s) + stack_elements(s)
                                                                         : columns;
  return std::max({kernel_rows_elements(s), input_gradient, weight_gradient});
}
// One worker's buffer: its patches, then dY transposed (weight_gradient_transposed).
std::int64_t cols_elements(const Conv2dShape& s) { return patches_elements(s) + dy_transposed_elements(s); }
std::int64_t weight_elements(const Conv2dShape& s) { return s.out_channels * patch_size(s); }

// Whether the image groups' weight-gradient sums are kept apart from the gradient and
// combined at the end (their layout differs from it) or the first group sums into it.
bool separate_weight_sums(const Conv2dShape& s) {
  return weight_gradient_transposed(s) || weight_gradient_by_kernel_rows(s) || weight_gradient_stacked(s);
}

// Weights rearranged for a pass: by kernel row (by_kernel_rows), flipped
// (input_gradient_as_convolution), or flipped and then by kernel row.
std::int64_t rearranged_weights_elements(const Conv2dShape& s) {
  const std::int64_t copies = (input_gradient_as_convolution(s) ? 1 : 0) + (by_kernel_rows(s) ? 1 : 0);
  return copies * weight_elements(s);
}

// Scratch: one im2col buffer per worker, then either the weight-gradient sums of the image
// groups (but the first, which sums into the gradient itself, unless kept apart) or the
// rearranged weights.
std::int64_t scratch_for_workers(const Conv2dShape& s, std::int64_t workers) {
  if (is_depthwise(s)) return 0;
  const std::int64_t sums = (separate_weight_sums(s) ? image_groups(s) : image_groups(s) - 1) * weight_elements(s);
  return workers * cols_elements(s) + std::max(sums, rearranged_weights_elements(s));
}

// The Winograd convolutions (conv_winograd.h) that apply, by their shape: the forward's
// (the weight gradient's too, where it applies) and the input gradient's.
std::optional<Conv2dShape> winograd_forward(const Conv2dShape& s) {
  return detail::winograd_applies(s) ? std::optional(s) : std::nullopt;
}
std::optional<Conv2dShape> winograd_input_gradient(const Conv2dShape& s) {
  const Conv2dShape t = swapped_channels(s);
  return detail::winograd_applies(t) ? std::optional(t) : std::nullopt;
}

std::int64_t winograd_scratch(const Conv2dShape& s, std::int64_t workers) {
  std::int64_t floats = 0;
  for (const auto& shape : {winograd_forward(s), winograd_input_gradient(s)})
    if (shape) floats = std::max(floats, detail::winograd_scratch_elements(*shape, workers));
  return floats;
}

// The passes taken channels-last (conv_channels_last.h): of the small convolutions, whose
// images go to the threads (resnet18's large ones go by Winograd). The input gradient as
// the forward of the swapped convolution (input_gradient_as_convolution).
bool channels_last_weight_gradient(const Conv2dShape& s) {
  return images_in_parallel(s) && detail::channels_last_weight_gradient_applies(s);
}
bool channels_last_forward(const Conv2dShape& s) {
  return images_in_parallel(s) && detail::channels_last_forward_applies(s);
}
bool channels_last_input_gradient(const Conv2dShape& s) {
  return images_in_parallel(s) && input_gradient_as_convolution(s) &&
         detail::channels_last_forward_applies(swapped_channels(s));
}
// Scratch: the workers' buffers, then the weight gradient's sums of the image groups but the
// first, or the forward's transposed weights (and the input gradient's flipped ones).
std::int64_t channels_last_scratch(const Conv2dShape& s, std::int64_t workers) {
  std::int64_t floats = 0;
  if (channels_last_weight_gradient(s))
    floats = workers * detail::channels_last_buffer_elements(s) + (image_groups(s) - 1) * weight_elements(s);
  if (channels_last_forward(s))
    floats = std::max(floats, workers * detail::channels_last_buffer_elements(s) + weight_elements(s));
  if (channels_last_input_gradient(s))
    floats = std::max(floats, workers * detail::channels_last_buffer_elements(swapped_channels(s)) +
                                  2 * weight_elements(s));
  return floats;
}
// As many of `workers` as the scratch holds for the channels-last passes.
std::int64_t channels_last_workers(const Conv2dShape& s, std::int64_t workers, std::span<float> scratch) {
  while (workers > 1 && channels_last_scratch(s, workers) > static_cast<std::int64_t>(scratch.size())) --workers;
  return workers;
}

// Convolutions whose images have few output positions (resnet18's and resnet50's 7x7
// layers: 49) but are too large for their images to go to the threads: oneDNN's sgemm is
// slow with 49 columns, and reads the whole weight matrix (9.4 MB at 512 -> 512) again for
// every image. Their images' columns go side by side, [K, images x positions], kSideBySide
// images to a product. resnet18's 512 -> 512 layer at batch 4, 2 threads: forward 4.6 ->
// 3.8 ms, input gradient 5.4 -> 4.3 ms, weight gradient 3.8 -> 3.6 ms (docs/BENCHMARKS.md).
// A fixed count, so the weight gradient's sum runs in the same order on every thread count.
constexpr std::int64_t kSideBySide = 4;
std::int64_t side_by_side_images(const Conv2dShape& s) {
  if (s.groups != 1 || s.batch < 2 || positions(s) >= 64 || images_in_parallel(s) || reads_input_directly(s))
    return 0;
  return std::min(kSideBySide, s.batch);
}
// Scratch: the columns and the products (or dY) of one chunk of images.
std::int64_t side_by_side_elements(const Conv2dShape& s) {
  return (patch_size(s) + s.out_channels) * side_by_side_images(s) * positions(s);
}
// cols[:, (n - first) p + q] = image n's im2col, for images [first, end).
void im2col_side_by_side(const Conv2dShape& s, const float* x, std::int64_t first, std::int64_t end, float* cols) {
  const std::int64_t p = positions(s), ld = (end - first) * p;
  for (std::int64_t n = first; n < end; ++n) im2col(s, x + n * s.in_channels * input_plane(s), cols + (n - first) * p, ld);
}
// wide[c][(n - first) p + q] <-> y[n][c][q] for images [first, end) of `channels` planes of p.
void side_by_side_layout(std::int64_t channels, std::int64_t p, std::int64_t first, std::int64_t end, const float* from,
                         float* to, bool to_wide) {
  const std::int64_t wide = (end - first) * p;
  detail::parallel_for((end - first) * channels, p, [&](std::int64_t plane) {
    const std::int64_t n = first + plane / channels, c = plane % channels;
    if (to_wide) std::copy_n(from + (n * channels + c) * p, p, to + c * wide + (n - first) * p);
    else std::copy_n(from + c * wide + (n - first) * p, p, to + (n * channels + c) * p);
  });
}
// Calls pass(first, end, wide, cols, products) for each chunk of images [first, end) side
// by side: wide = (end - first) x positions, cols [K, wide] and products [out channels, wide]
// in the scratch.
template <typename F>
void for_each_chunk(const Conv2dShape& s, float* scratch, F pass) {
  const std::int64_t m = side_by_side_images(s), p = positions(s);
  for (std::int64_t first = 0; first < s.batch; first += m) {
    const std::int64_t end = std::min(s.batch, first + m), wide = (end - first) * p;
    pass(first, end, wide, scratch, scratch + patch_size(s) * wide);
  }
}

// As many threads as the scratch holds for a Winograd convolution of shape t.
std::int64_t winograd_workers(const Conv2dShape& t, std::span<float> scratch) {
  std::int64_t workers = omp_get_max_threads();
  while (workers > 1 && detail::winograd_scratch_elements(t, workers) > static_cast<std::int64_t>(scratch.size()))
    --workers;
  return workers;
}

void winograd(const Conv2dShape& t, const float* x, const float* weight, bool flipped, float* y,
              std::span<float> scratch) {
  detail::winograd_convolve(t, x, weight, flipped, y, scratch.data(), winograd_workers(t, scratch));
}

// As many workers as threads, groups and the caller's scratch allow.
std::int64_t workers_for(const Conv2dShape& s, std::span<float> scratch) {
  std::int64_t workers = std::min<std::int64_t>(omp_get_max_threads(), image_groups(s));
  const std::int64_t cols = cols_elements(s);
  if (cols > 0) {
    const std::int64_t fit = (static_cast<std::int64_t>(scratch.size()) - scratch_for_workers(s, 0)) / cols;
    workers = std::min(workers, fit);
  }
  // Below this many multiply-adds, starting the threads costs more than it saves.
  const std::int64_t work = s.batch * s.out_channels * positions(s) * patch_size(s);
  return work < detail::kParallelMinElements ? 1 : std::max<std::int64_t>(workers, 1);
}

// Runs item(i, buffer of the thread) for i in [0, count) on `workers` threads, their buffers
// `buffer` floats apart from scratch on.
template <typename F>
void on_workers(std::int64_t count, std::int64_t workers, std::int64_t buffer, float* scratch, F item) {
  if (workers <= 1) {
    // Outside any parallel region: a region of one thread (`if (false)`) would still nest
    // the GEMMs inside it, and oneDNN runs a nested GEMM on one thread (resnet18's large
    // convolutions at 2 threads took 2.5x as long).
    for (std::int64_t i = 0; i < count; ++i) item(i, scratch);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(static_cast<int>(workers))
  for (std::int64_t i = 0; i < count; ++i) item(i, scratch + omp_get_thread_num() * buffer);
}

// One image's group's weight gradient from its rows (im2row), added (beta 1) to or written
// (beta 0) into sum, laid out per group and kernel row i as [out channels, in channels x
// kernel_w], or transposed [in channels x kernel_w, out channels] (weight_gradient_transposed).
void add_weight_gradient_by_kernel_rows(const Conv2dShape& s, const float* dy, const float* rows, std::int64_t g,
                                        float beta, float* sum) {
  const std::int64_t cout = s.out_channels_per_group(), k = row_shifts(s), p = positions(s), ldb = rows_plane(s);
  for (std::int64_t i = 0; i < s.kernel_h; ++i) {
    float* out = sum + (g * s.kernel_h + i) * cout * k;
    const float* b = kernel_row_matrix(s, rows, i);
    if (weight_gradient_transposed(s)) {
      gemm(false, true, k, cout, p, 1.0f, b, ldb, dy, p, beta, out, cout);
    } else {
      gemm(false, true, cout, k, p, 1.0f, dy, p, b, ldb, beta, out, k);
    }
  }
}

// One image's group's weight gradient by stacked kernel rows (weight_gradient_stacked), from
// its rows (im2row), added (beta 1) to or written (beta 0) into sum. The stack is built
// transposed, [phase positions][(q, out channel)], dY transposed into its column block q
// from row q out_w on: the product is then rows x stack, both operands as oneDNN reads them
// fastest (48 x 48 x 1088, one thread, loaded machine: 43 us against 63 us with the stack
// [(q, out channel)][positions] taken transposed). Per group, phase and in-channel shift
// (ci, j), the sum holds the phase's kernel rows' gradients as [(q, out channel)], at the
// phase's first kernel row's stacked_position. stack: the worker's buffer of stack_elements.
void add_weight_gradient_stacked(const Conv2dShape& s, const float* dy, const float* rows, float* stack,
                                 std::int64_t g, float beta, float* sum) {
  const std::int64_t cout = s.out_channels_per_group(), k = row_shifts(s), ow = s.out_w(), p = positions(s);
  const std::int64_t t = phase_rows(s) * ow;  // K: a phase's rows
  for (std::int64_t phase = 0; phase < phases(s); ++phase) {
    const std::int64_t width = kernel_rows_in_phase(s, phase) * cout;  // N: (q, out channel)
    for (std::int64_t q = 0; q * cout < width; ++q) {
      const auto zero_rows = [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end; ++r) std::fill_n(stack + r * width + q * cout, cout, 0.0f);
      };
      zero_rows(0, q * ow);
      detail::transpose_by_quads(dy, p, cout, p, stack + q * ow * width + q * cout, width);
      zero_rows(q * ow + p, t);
    }
    gemm(false, false, k, width, t, 1.0f, rows + phase * t, rows_plane(s), stack, width, beta,
         sum + (g * s.kernel_h + stacked_position(s, phase)) * cout * k, width);
  }
}

// y = the convolution t of x channels-last (conv_channels_last.h), images on the workers.
void convolve_channels_last(const Conv2dShape& t, const float* x, const float* weight, float* y, float* scratch,
                            std::int64_t workers) {
  const std::int64_t buffer = detail::channels_last_buffer_elements(t), k = patch_size(t);
  float* by_tap = scratch + workers * buffer;  // [in channels x taps, out channels]
  detail::transpose_by_quads(weight, k, t.out_channels, k, by_tap, t.out_channels);
  on_workers(t.batch, workers, buffer, scratch, [&](std::int64_t n, float* own) {
    detail::channels_last_forward_image(t, x, by_tap, n, own, y);
  });
}

// Where weight-gradient entry (group g, output channel co, patch index kk = (ci, i, j)) sits
// in an image group's sum when the sums are kept apart (separate_weight_sums). The layout
// is decided once, outside the loop over the entries.
struct PartialSumLayout {
  bool by_kernel_rows, stacked, transposed;
  explicit PartialSumLayout(const Conv2dShape& s)
      : by_kernel_rows(weight_gradient_by_kernel_rows(s) || weight_gradient_stacked(s)),
        stacked(weight_gradient_stacked(s)),
        transposed(weight_gradient_transposed(s)) {}

  std::int64_t index(const Conv2dShape& s, std::int64_t g, std::int64_t co, std::int64_t kk) const {
    const std::int64_t cout = s.out_channels_per_group();
    if (!by_kernel_rows) return (g * patch_size(s) + kk) * cout + co;  // transposed: [g][kk][co]
    const std::int64_t taps = s.kernel_h * s.kernel_w, ci = kk / taps, i = kk % taps / s.kernel_w,
                       j = kk % s.kernel_w, k = row_shifts(s);
    if (stacked) {  // [g][phase][(ci, j)][(q, co)]
      const std::int64_t phase = i % s.stride_h, width = kernel_rows_in_phase(s, phase) * cout;
      return (g * s.kernel_h + stacked_position(s, phase)) * cout * k + (ci * s.kernel_w + j) * width +
             i / s.stride_h * cout + co;
    }
    const std::int64_t at = (g * s.kernel_h + i) * cout * k;
    return transposed ? at + (ci * s.kernel_w + j) * cout + co : at + co * k + ci * s.kernel_w + j;
  }
};

void check_scratch(const char* kernel, const Conv2dShape& s, std::span<float> scratch) {
  expect_at_least(kernel, "scratch", scratch,
                  std::max({scratch_for_workers(s, 1), winograd_scratch(s, 1), channels_last_scratch(s, 1),
                            side_by_side_elements(s)}));
}

}  // namespace

std::int64_t conv2d_scratch_elements(const Conv2dShape& s) {
  validate(s);
  const std::int64_t workers = std::min<std::int64_t>(omp_get_max_threads(), image_groups(s));
  return std::max({scratch_for_workers(s, workers), winograd_scratch(s, omp_get_max_threads()),
                   channels_last_scratch(s, workers), side_by_side_elements(s)});
}

void conv2d_forward(const Conv2dShape& s, std::span<const float> x, std::span<const float> weight,
                    std::span<const float> bias, std::span<float> y, std::span<float> scratch) {
  validate(s);
  expect_size("conv2d_forward", "x", x, s.batch * s.in_channels * input_plane(s));
  expect_size("conv2d_forward", "weight", weight, weight_elements(s));
  expect_size("conv2d_forward", "bias", bias, s.bias ? s.out_channels : 0);
  expect_size("conv2d_forward", "y", y, s.batch * s.out_channels * positions(s));
  check_scratch("conv2d_forward", s, scratch);
  if (is_depthwise(s)) return depthwise_forward(s, x.data(), weight.data(), bias.data(), y.data());
  const std::int64_t k = patch_size(s), p = positions(s), cout = s.out_channels_per_group();
  if (winograd_forward(s) || channels_last_forward(s) || side_by_side_images(s)) {
    if (winograd_forward(s))
      winograd(s, x.data(), weight.data(), false, y.data(), scratch);
    else if (side_by_side_images(s))
      for_each_chunk(s, scratch.data(), [&](std::int64_t first, std::int64_t end, std::int64_t wide, float* cols,
                                            float* products) {
        im2col_side_by_side(s, x.data(), first, end, cols);
        gemm(false, false, cout, wide, k, 1.0f, weight.data(), k, cols, wide, 0.0f, products, wide);
        side_by_side_layout(cout, p, first, end, products, y.data(), false);
      });
    else
      convolve_channels_last(s, x.data(), weight.data(), y.data(), scratch.data(),
                             channels_last_workers(s, workers_for(s, scratch), scratch));
    if (s.bias)
      detail::parallel_for(s.batch * s.out_channels, p, [&](std::int64_t plane) {
        float* out = y.data() + plane * p;
        for (std::int64_t i = 0; i < p; ++i) out[i] += bias[plane % s.out_channels];
      });
    return;
  }
  const std::int64_t workers = workers_for(s, scratch);
  float* by_row = scratch.data() + workers * cols_elements(s);
  if (by_kernel_rows(s)) weights_by_kernel_row(s, weight.data(), by_row);
  on_workers(s.batch, workers, cols_elements(s), scratch.data(), [&](std::int64_t n, float* buffer) {
    for (std::int64_t g = 0; g < s.groups; ++g) {
      const GroupOffsets at = offsets(s, n, g);
      if (by_kernel_rows(s)) {
        im2row(s, x.data() + at.x, buffer);
        convolve_by_kernel_rows(s, by_row, g, buffer, y.data() + at.y);
        continue;
      }
      const float* cols = columns(s, x.data() + at.x, buffer);
      gemm(false, false, cout, p, k, 1.0f, weight.data() + at.weight, k, cols, p, 0.0f, y.data() + at.y, p);
    }
    if (!s.bias) return;
    for (std::int64_t c = 0; c < s.out_channels; ++c) {
      float* plane = y.data() + (n * s.out_channels + c) * p;
      for (std::int64_t i = 0; i < p; ++i) plane[i] += bias[c];
    }
  });
}

void conv2d_backward_input(const Conv2dShape& s, std::span<const float> dy, std::span<const float> weight,
                           std::span<float> dx, std::span<float> scratch) {
  validate(s);
  expect_size("conv2d_backward_input", "dy", dy, s.batch * s.out_channels * positions(s));
  expect_size("conv2d_backward_input", "weight", weight, weight_elements(s));
  expect_size("conv2d_backward_input", "dx", dx, s.batch * s.in_channels * input_plane(s));
  check_scratch("conv2d_backward_input", s, scratch);
  if (is_depthwise(s)) return depthwise_backward_input(s, dy.data(), weight.data(), dx.data());
  if (const std::optional<Conv2dShape> t = winograd_input_gradient(s))
    return winograd(*t, dy.data(), weight.data(), true, dx.data(), scratch);
  const std::int64_t k = patch_size(s), p = positions(s), cout = s.out_channels_per_group();
  const std::int64_t workers = workers_for(s, scratch);
  if (channels_last_input_gradient(s)) {
    const Conv2dShape t = swapped_channels(s);
    const std::int64_t threads = channels_last_workers(s, workers, scratch);
    // After the workers' buffers and the transposed weights (channels_last_scratch).
    float* flipped = scratch.data() + threads * detail::channels_last_buffer_elements(t) + weight_elements(s);
    flip_weights(s, weight.data(), flipped);
    return convolve_channels_last(t, dy.data(), flipped, dx.data(), scratch.data(), threads);
  }
  if (side_by_side_images(s)) {
    // col2im also at stride 1 (not the convolution with flipped weights): as fast, and
    // without a copy of the weights in the scratch (9.4 MB at 512 -> 512).
    std::fill(dx.begin(), dx.end(), 0.0f);
    for_each_chunk(s, scratch.data(), [&](std::int64_t first, std::int64_t end, std::int64_t wide, float* cols,
                                          float* dy_wide) {
      side_by_side_layout(cout, p, first, end, dy.data(), dy_wide, true);
      gemm(true, false, k, wide, cout, 1.0f, weight.data(), k, dy_wide, wide, 0.0f, cols, wide);
      for (std::int64_t n = first; n < end; ++n)
        col2im_add(s, cols + (n - first) * p, dx.data() + n * s.in_channels * input_plane(s), wide);
    });
    return;
  }
  if (input_gradient_as_convolution(s)) {
    const Conv2dShape t = swapped_channels(s);
    const std::int64_t cin = s.in_channels_per_group(), k_t = patch_size(t);
    float* flipped = scratch.data() + workers * cols_elements(s);
    float* by_row = flipped + weight_elements(s);
    flip_weights(s, weight.data(), flipped);
    if (by_kernel_rows(s)) weights_by_kernel_row(t, flipped, by_row);
    on_workers(s.batch, workers, cols_elements(s), scratch.data(), [&](std::int64_t n, float* buffer) {
      for (std::int64_t g = 0; g < s.groups; ++g) {
        const GroupOffsets at = offsets(s, n, g);
        if (by_kernel_rows(s)) {
          im2row(t, dy.data() + at.y, buffer);
          convolve_by_kernel_rows(t, by_row, g, buffer, dx.data() + at.x);
          continue;
        }
        im2col(t, dy.data() + at.y, buffer);
        gemm(false, false, cin, input_plane(s), k_t, 1.0f, flipped + g * cin * k_t, k_t, buffer, input_plane(s), 0.0f,
             dx.data() + at.x, input_plane(s));
      }
    });
    return;
  }
  on_workers(s.batch, workers, cols_elements(s), scratch.data(), [&](std::int64_t n, float* buffer) {
    const std::int64_t image = s.in_channels * input_plane(s);
    if (!reads_input_directly(s)) std::fill(dx.begin() + n * image, dx.begin() + (n + 1) * image, 0.0f);
    for (std::int64_t g = 0; g < s.groups; ++g) {
      const GroupOffsets at = offsets(s, n, g);
      if (reads_input_directly(s)) {
        gemm(true, false, k, p, cout, 1.0f, weight.data() + at.weight, k, dy.data() + at.y, p, 0.0f,
             dx.data() + at.x, p);
        continue;
      }
      gemm(true, false, k, p, cout, 1.0f, weight.data() + at.weight, k, dy.data() + at.y, p, 0.0f, buffer, p);
      col2im_add(s, buffer, dx.data() + at.x);
    }
  });
}

void conv2d_backward_params(const Conv2dShape& s, std::span<const float> dy, std::span<const float> x,
                            std::span<float> dweight, std::span<float> dbias, std::span<float> scratch) {
  validate(s);
  expect_size("conv2d_backward_params", "dy", dy, s.batch * s.out_channels * positions(s));
  expect_size("conv2d_backward_params", "x", x, s.batch * s.in_channels * input_plane(s));
  expect_size("conv2d_backward_params", "dweight", dweight, weight_elements(s));
  expect_size("conv2d_backward_params", "dbias", dbias, s.bias ? s.out_channels : 0);
  check_scratch("conv2d_backward_params", s, scratch);
  const std::int64_t k = patch_size(s), p = positions(s), cout = s.out_channels_per_group();
  if (is_depthwise(s)) {
    depthwise_backward_weight(s, dy.data(), x.data(), dweight.data());
  } else if (detail::winograd_weight_gradient_applies(s)) {
    detail::winograd_weight_gradient(s, x.data(), dy.data(), dweight.data(), scratch.data(),
                                     winograd_workers(s, scratch));
  } else if (side_by_side_images(s)) {
    for_each_chunk(s, scratch.data(), [&](std::int64_t first, std::int64_t end, std::int64_t wide, float* cols,
                                          float* dy_wide) {
      im2col_side_by_side(s, x.data(), first, end, cols);
      side_by_side_layout(cout, p, first, end, dy.data(), dy_wide, true);
      gemm(false, true, cout, k, wide, 1.0f, dy_wide, wide, cols, wide, first == 0 ? 0.0f : 1.0f, dweight.data(), k);
    });
  } else {
    const bool channels_last = channels_last_weight_gradient(s);
    const std::int64_t groups = image_groups(s), size = weight_elements(s),
                       buffer_floats = channels_last ? detail::channels_last_buffer_elements(s) : cols_elements(s),
                       workers = channels_last ? channels_last_workers(s, workers_for(s, scratch), scratch)
                                               : workers_for(s, scratch);
    const bool transposed = weight_gradient_transposed(s), separate = !channels_last && separate_weight_sums(s);
    float* sums = scratch.data() + workers * buffer_floats;
    on_workers(groups, workers, buffer_floats, scratch.data(), [&](std::int64_t group, float* buffer) {
      float* sum = separate ? sums + group * size : group == 0 ? dweight.data() : sums + (group - 1) * size;
      const std::int64_t first = group * s.batch / groups, end = (group + 1) * s.batch / groups;
      if (channels_last)
        return detail::channels_last_weight_gradient_sum(s, x.data(), dy.data(), first, end, buffer, sum);
      for (std::int64_t n = first; n < end; ++n) {
        for (std::int64_t g = 0; g < s.groups; ++g) {
          const GroupOffsets at = offsets(s, n, g);
          // The group's first image overwrites, the others add: no separate zeroing pass.
          const float beta = n == first ? 0.0f : 1.0f;
          if (weight_gradient_by_kernel_rows(s)) {
            im2row(s, x.data() + at.x, buffer);
            add_weight_gradient_by_kernel_rows(s, dy.data() + at.y, buffer, g, beta, sum);
            continue;
          }
          if (weight_gradient_stacked(s)) {
            im2row(s, x.data() + at.x, buffer);
            add_weight_gradient_stacked(s, dy.data() + at.y, buffer, buffer + kernel_rows_elements(s), g, beta, sum);
            continue;
          }
          const float* cols = columns(s, x.data() + at.x, buffer);
          if (transposed) {
            float* dy_t = buffer + patches_elements(s);
            detail::transpose_by_quads(dy.data() + at.y, p, cout, p, dy_t, cout);
            gemm(false, false, k, cout, p, 1.0f, cols, p, dy_t, cout, beta, sum + at.weight, cout);
          } else {
            gemm(false, true, cout, k, p, 1.0f, dy.data() + at.y, p, cols, p, beta, sum + at.weight, k);
          }
        }
      }
    });
    if (separate) {
      // dweight[g][co][kk] = the groups' sums at their layout's place, added in group order.
      const PartialSumLayout layout(s);
      for (std::int64_t g = 0; g < s.groups; ++g)
        for (std::int64_t co = 0; co < cout; ++co)
          for (std::int64_t kk = 0; kk < k; ++kk) {
            const std::int64_t at = layout.index(s, g, co, kk);
            float total = sums[at];
            for (std::int64_t group = 1; group < groups; ++group) total += sums[group * size + at];
            dweight[(g * cout + co) * k + kk] = total;
          }
    } else {
      for (std::int64_t group = 1; group < groups; ++group) {
        const float* sum = sums + (group - 1) * size;
        for (std::int64_t i = 0; i < size; ++i) dweight[i] += sum[i];
      }
    }
  }
  if (!s.bias) return;
  std::fill(dbias.begin(), dbias.end(), 0.0f);
  for (std::int64_t n = 0; n < s.batch; ++n) {
    for (std::int64_t c = 0; c < s.out_channels; ++c) {
      const float* plane = dy.data() + (n * s.out_channels + c) * p;
      float sum = 0.0f;
      for (std::int64_t i = 0; i < p; ++i) sum += plane[i];
      dbias[c] += sum;
    }
  }
}

}  // namespace poet::kernels
