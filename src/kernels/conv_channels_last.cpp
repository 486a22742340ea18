// Each worker copies a block of images channels-last into its scratch and accumulates their
// weight gradient in registers: per output pixel, the nine taps' vectors of 16 input
// channels times dy of three output channels (broadcast), 27 multiply-adds from 9 + 3 loads.
// The multiply-adds, not the loads, bound it (AVX2 takes the same sums in six passes). The
// forward, with AVX-512 only, reads the same copy, one image at a time: per input channel
// and tap, two vectors of output channels' weights times x at 8 pixels (broadcast), 16
// multiply-adds from 2 + 8 loads; the outputs, channels in the lanes, are transposed into y.
// resnet18_cifar, one thread, batch 32: docs/BENCHMARKS.md, "Small convolutions
// channels-last" and "The weight gradient channels-last on AVX2".
#include "conv_channels_last.h"

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "quad.h"

namespace poet::kernels::detail {
namespace {

constexpr std::int64_t kLanes = 16;  // input channels per block: one AVX-512 vector, two AVX2 ones
// Images copied channels-last at once: their copy of 16 channels (74 KiB an image at 32x32)
// stays in the L2 cache while every output channel reads it.
constexpr std::int64_t kBlockImages = 4;
// Output channels whose accumulators (x 9 taps) are held in registers: 27 of the 32.
constexpr int kOutputChannels = 3;
// The forward's accumulators: 2 vectors of 16 output channels at 8 pixels of an output row,
// from 2 weight loads and 8 broadcasts of x per input channel and tap.
constexpr std::int64_t kForwardVectors = 2, kForwardPixels = 8;

std::int64_t padded_width(const Conv2dShape& s) { return s.in_w + 2; }
// One image's block of 16 channels, channels-last with a zero border.
std::int64_t image_floats(const Conv2dShape& s) { return (s.in_h + 2) * padded_width(s) * kLanes; }
std::int64_t channel_blocks(const Conv2dShape& s) { return s.in_channels / kLanes; }
float* aligned(float* p) {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  return p + (kLanes - at / sizeof(float) % kLanes) % kLanes;
}

// copy[b][k][(y + 1) (w + 2) + x + 1][c] = x[first + k][16 b + c][y][x], and zero around.
void copy_channels_last(const Conv2dShape& s, const float* x, std::int64_t first, std::int64_t images,
                        float* copy) {
  const std::int64_t plane = s.in_h * s.in_w, wp = padded_width(s), row = wp * kLanes;
  for (std::int64_t b = 0; b < channel_blocks(s); ++b)
    for (std::int64_t k = 0; k < images; ++k) {
      float* image = copy + (b * kBlockImages + k) * image_floats(s);
      std::fill_n(image, row, 0.0f);
      std::fill_n(image + (s.in_h + 1) * row, row, 0.0f);
      const float* channels = x + ((first + k) * s.in_channels + b * kLanes) * plane;
      for (std::int64_t y = 0; y < s.in_h; ++y) {
        float* pixels = image + (y + 1) * row;
        std::fill_n(pixels, kLanes, 0.0f);
        std::fill_n(pixels + (wp - 1) * kLanes, kLanes, 0.0f);
        transpose_by_quads(channels + y * s.in_w, plane, kLanes, s.in_w, pixels + kLanes, kLanes);
      }
    }
}

// The widest vectors the kernels below have for this CPU. Each lane of a weight-gradient sum
// sees the same multiply-adds in the same order with either, so both give the same bits.
enum class Vectors { none, avx2, avx512 };
Vectors cpu_vectors() {
#if defined(__x86_64__)
  static const Vectors has = __builtin_cpu_supports("avx512f")                                     ? Vectors::avx512
                             : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? Vectors::avx2
                                                                                                 : Vectors::none;
  return has;
#else
  return Vectors::none;
#endif
}

#if defined(__x86_64__)
// sums[b][t][c] = sum over the images and pixels p of copy[p + tap t][c] dy[b][p], for B
// output channels (dy at the first, the next a plane apart).
template <int B>
__attribute__((target("avx512f,fma"))) void accumulate_avx512(const Conv2dShape& s, const float* copy,
                                                              std::int64_t images, const float* dy, float* sums) {
  const std::int64_t wp = padded_width(s), plane = s.out_h() * s.out_w(), dy_image = s.out_channels * plane;
  __m512 acc[B][9];
#pragma GCC unroll 3
  for (int b = 0; b < B; ++b)
#pragma GCC unroll 9
    for (int t = 0; t < 9; ++t) acc[b][t] = _mm512_setzero_ps();
  for (std::int64_t k = 0; k < images; ++k)
    for (std::int64_t y = 0; y < s.out_h(); ++y) {
      // Output row y reads padded rows y stride_h + i, input rows y stride_h + i - 1.
      const float* rows = copy + k * image_floats(s) + y * s.stride_h * wp * kLanes;
      const float* d = dy + k * dy_image + y * s.out_w();
      for (std::int64_t x = 0; x < s.out_w(); ++x) {
        __m512 g[B];
#pragma GCC unroll 3
        for (int b = 0; b < B; ++b) g[b] = _mm512_set1_ps(d[b * plane + x]);
#pragma GCC unroll 9
        for (int t = 0; t < 9; ++t) {
          const __m512 v = _mm512_load_ps(rows + ((t / 3) * wp + x * s.stride_w + t % 3) * kLanes);
#pragma GCC unroll 3
          for (int b = 0; b < B; ++b) acc[b][t] = _mm512_fmadd_ps(v, g[b], acc[b][t]);
        }
      }
    }
#pragma GCC unroll 3
  for (int b = 0; b < B; ++b)
#pragma GCC unroll 9
    for (int t = 0; t < 9; ++t) _mm512_storeu_ps(sums + (b * 9 + t) * kLanes, acc[b][t]);
}

// The same with AVX2's 16 registers of 8 floats: 27 accumulators would not fit, so six
// passes, each over one half of the 16 channels and one kernel row i: 3 taps x B output
// channels, 9 multiply-adds from 3 loads and 3 broadcasts. (An AVX2 forward, 2 vectors of
// output channels x 4 pixels, was slower than oneDNN's: its weights came from the L2 cache
// for every 4 pixels.)
template <int B>
__attribute__((target("avx2,fma"))) void accumulate_avx2(const Conv2dShape& s, const float* copy,
                                                         std::int64_t images, const float* dy, float* sums) {
  // Locals, not s's calls: out_h() and out_w() divide, and the rows are as short as 8 pixels.
  const std::int64_t wp = padded_width(s), out_h = s.out_h(), out_w = s.out_w(), plane = out_h * out_w,
                     dy_image = s.out_channels * plane, step = s.stride_w * kLanes;
  for (int half = 0; half < 2; ++half)
    for (int i = 0; i < 3; ++i) {
      __m256 acc[B][3];
#pragma GCC unroll 3
      for (int b = 0; b < B; ++b)
#pragma GCC unroll 3
        for (int j = 0; j < 3; ++j) acc[b][j] = _mm256_setzero_ps();
      for (std::int64_t k = 0; k < images; ++k)
        for (std::int64_t y = 0; y < out_h; ++y) {
          const float* at = copy + k * image_floats(s) + (y * s.stride_h + i) * wp * kLanes + half * 8;
          const float* d = dy + k * dy_image + y * out_w;
          for (const float* end = d + out_w; d < end; ++d, at += step) {
            __m256 v[3];
#pragma GCC unroll 3
            for (int j = 0; j < 3; ++j) v[j] = _mm256_load_ps(at + j * kLanes);
#pragma GCC unroll 3
            for (int b = 0; b < B; ++b) {
              const __m256 g = _mm256_broadcast_ss(d + b * plane);
#pragma GCC unroll 3
              for (int j = 0; j < 3; ++j) acc[b][j] = _mm256_fmadd_ps(v[j], g, acc[b][j]);
            }
          }
        }
#pragma GCC unroll 3
      for (int b = 0; b < B; ++b)
#pragma GCC unroll 3
        for (int j = 0; j < 3; ++j) _mm256_storeu_ps(sums + (b * 9 + i * 3 + j) * kLanes + half * 8, acc[b][j]);
    }
}

template <int B>
void accumulate(const Conv2dShape& s, const float* copy, std::int64_t images, const float* dy, float* sums) {
  if (cpu_vectors() == Vectors::avx512) accumulate_avx512<B>(s, copy, images, dy, sums);
  else accumulate_avx2<B>(s, copy, images, dy, sums);
}

// out[p][v 16 + lane] = y[co + v 16 + lane][oy][ox + p] of the image in copy, for p <
// kForwardPixels and v < kForwardVectors; by_tap[ci][t][co] holds the weights.
__attribute__((target("avx512f,fma"))) void forward_block(const Conv2dShape& s, const float* copy, const float* by_tap,
                                                          std::int64_t oy, std::int64_t ox, std::int64_t co,
                                                          float* out) {
  const std::int64_t wp = padded_width(s), step = s.stride_w * kLanes;
  __m512 acc[kForwardVectors][kForwardPixels];
#pragma GCC unroll 2
  for (int v = 0; v < kForwardVectors; ++v)
#pragma GCC unroll 8
    for (int p = 0; p < kForwardPixels; ++p) acc[v][p] = _mm512_setzero_ps();
  for (std::int64_t b = 0; b < channel_blocks(s); ++b)
    for (std::int64_t i = 0; i < 3; ++i) {
      const float* row =
          copy + b * kBlockImages * image_floats(s) + ((oy * s.stride_h + i) * wp + ox * s.stride_w) * kLanes;
      for (std::int64_t j = 0; j < 3; ++j)
        for (std::int64_t c = 0; c < kLanes; ++c) {
          const float* w = by_tap + ((b * kLanes + c) * 9 + i * 3 + j) * s.out_channels + co;
          __m512 weights[kForwardVectors];
#pragma GCC unroll 2
          for (int v = 0; v < kForwardVectors; ++v) weights[v] = _mm512_loadu_ps(w + v * kLanes);
          const float* pixels = row + j * kLanes + c;
#pragma GCC unroll 8
          for (int p = 0; p < kForwardPixels; ++p) {
            const __m512 x = _mm512_set1_ps(pixels[p * step]);
#pragma GCC unroll 2
            for (int v = 0; v < kForwardVectors; ++v) acc[v][p] = _mm512_fmadd_ps(weights[v], x, acc[v][p]);
          }
        }
    }
#pragma GCC unroll 2
  for (int v = 0; v < kForwardVectors; ++v)
#pragma GCC unroll 8
    for (int p = 0; p < kForwardPixels; ++p) _mm512_storeu_ps(out + (p * kForwardVectors + v) * kLanes, acc[v][p]);
}
#endif

}  // namespace

// Image n's copy (copy_channels_last), then y by blocks of output channels and pixels.
void channels_last_forward_image(const Conv2dShape& s, const float* x, const float* by_tap, std::int64_t n,
                                 float* buffer, float* y) {
#if defined(__x86_64__)
  const std::int64_t plane = s.out_h() * s.out_w(), width = kForwardVectors * kLanes;
  float out[kForwardPixels * width];
  buffer = aligned(buffer);
  copy_channels_last(s, x, n, 1, buffer);
  for (std::int64_t co = 0; co < s.out_channels; co += width)
    for (std::int64_t oy = 0; oy < s.out_h(); ++oy)
      for (std::int64_t ox = 0; ox < s.out_w(); ox += kForwardPixels) {
        forward_block(s, buffer, by_tap, oy, ox, co, out);
        float* at = y + (n * s.out_channels + co) * plane + oy * s.out_w() + ox;
        transpose_by_quads(out, width, kForwardPixels, width, at, plane);
      }
#else
  // Never reached: channels_last_forward_applies is false without AVX-512.
  (void)s, (void)x, (void)by_tap, (void)n, (void)buffer, (void)y;
#endif
}

// By blocks of kBlockImages, each copied channels-last and then summed into sum in order.
void channels_last_weight_gradient_sum(const Conv2dShape& s, const float* x, const float* dy, std::int64_t first,
                                       std::int64_t end, float* buffer, float* sum) {
#if defined(__x86_64__)
  const std::int64_t plane = s.out_h() * s.out_w();
  float sums[kOutputChannels * 9 * kLanes];
  buffer = aligned(buffer);
  for (std::int64_t block = first; block < end; block += kBlockImages) {
    const std::int64_t images = std::min(kBlockImages, end - block);
    copy_channels_last(s, x, block, images, buffer);
    for (std::int64_t b = 0; b < channel_blocks(s); ++b)
      for (std::int64_t co = 0; co < s.out_channels;) {
        const float* copy = buffer + b * kBlockImages * image_floats(s);
        const float* d = dy + (block * s.out_channels + co) * plane;
        const int width = static_cast<int>(std::min<std::int64_t>(kOutputChannels, s.out_channels - co));
        if (width == 3) accumulate<3>(s, copy, images, d, sums);
        else if (width == 2) accumulate<2>(s, copy, images, d, sums);
        else accumulate<1>(s, copy, images, d, sums);
        for (int o = 0; o < width; ++o)
          for (int t = 0; t < 9; ++t)
            for (std::int64_t c = 0; c < kLanes; ++c) {
              float& w = sum[((co + o) * s.in_channels + b * kLanes + c) * 9 + t];
              const float v = sums[(o * 9 + t) * kLanes + c];
              w = block == first ? v : w + v;
            }
        co += width;
      }
  }
#else
  // Never reached: channels_last_weight_gradient_applies is false without AVX2.
  (void)s, (void)x, (void)dy, (void)first, (void)end, (void)buffer, (void)sum;
#endif
}

bool channels_last_weight_gradient_applies(const Conv2dShape& s) {
  const auto one_or_two = [](int stride) { return stride == 1 || stride == 2; };
  return s.kernel_h == 3 && s.kernel_w == 3 && one_or_two(s.stride_h) && one_or_two(s.stride_w) && s.pad_h == 1 &&
         s.pad_w == 1 && s.dilation == 1 && s.groups == 1 && s.in_channels % kLanes == 0 &&
         cpu_vectors() != Vectors::none;
}

bool channels_last_forward_applies(const Conv2dShape& s) {
  return channels_last_weight_gradient_applies(s) && cpu_vectors() == Vectors::avx512 &&
         s.out_channels % (kForwardVectors * kLanes) == 0 && s.out_w() % kForwardPixels == 0;
}

std::int64_t channels_last_buffer_elements(const Conv2dShape& s) {
  return kBlockImages * channel_blocks(s) * image_floats(s) + kLanes;  // and a vector's worth to align it
}

}  // namespace poet::kernels::detail
