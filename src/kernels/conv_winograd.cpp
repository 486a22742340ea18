// F(2x2, 3x3): with B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; 1/2 1/2 1/2;
// 1/2 -1/2 1/2; 0 0 1] and A^T = [1 1 1 0; 0 1 -1 -1], a 2x2 output block is
// A^T [(G g G^T) .* (B^T d B)] A for the 4x4 input block d around it and the 3x3 kernel g.
// Summed over input channels, the element-wise product is, per position p of the 4x4,
// a GEMM: M[p] [out channels, tiles] = U[p] [out channels, in channels] x V[p] [in
// channels, tiles]. Tiles go in blocks of whole tile rows (fixed by the shape, not the
// thread count), each block's V and M in its worker's scratch.
#include "conv_winograd.h"

#include <omp.h>

#include <algorithm>

#include "gemm.h"
#include "parallel_for.h"

namespace poet::kernels::detail {
namespace {

constexpr std::int64_t kPositions = 16;  // of a 4x4 tile
// Tiles per block, in whole tile rows (at least one). Measured on resnet18's shapes
// (bench/conv_kernels.cpp): with 4 times as many, V and M left the L2 cache; with a quarter,
// the GEMMs, which read all of U for every block, spent their time loading it.
constexpr std::int64_t kBlockTiles = 64;
// The weight gradient sums the blocks in this many fixed groups of consecutive blocks (each
// in block order, then the groups in order), whatever the thread count: one per thread of
// the 2-core machines it was measured on. Every group writes all of dU, which the last pass
// reads back: with 4 groups resnet18's 256 channels at 14x14 were slower than im2col.
constexpr std::int64_t kWeightGroups = 2;

// The 16 positions' matrices (of U, V, M) lie this far apart: a multiple of 32 floats plus
// 16, so that a pass reading or writing all 16 at once touches 16 different L1 sets. At
// their plain sizes (multiples of 4 KiB for resnet18's channels) they took one set, and the
// weight gradient ran 1.7x slower than without Winograd.
std::int64_t skewed(std::int64_t floats) { return (floats + 31) / 32 * 32 + 16; }

// How a convolution's tiles are cut into blocks of whole tile rows (a block may span two
// images), and where each worker's matrices lie.
struct Tiling {
  std::int64_t cols, rows;            // tiles across and down an image
  std::int64_t rows_per_block, tiles;  // per block (tiles: the last block may have fewer)
  std::int64_t blocks;
  std::int64_t line_width;  // a padded input row: columns -1 .. 2 cols, one more than odd widths need
  std::int64_t u_stride, v_stride, m_stride;  // between positions
  std::int64_t lines;        // a tile row's lines: 4 per channel, line_width each
  std::int64_t worker;       // one worker's V, M, lines and a zero row
};

Tiling tiling(const Conv2dShape& s) {
  Tiling t;
  t.cols = (s.in_w + 1) / 2;
  t.rows = (s.in_h + 1) / 2;
  t.rows_per_block = std::max<std::int64_t>(1, kBlockTiles / t.cols);
  t.tiles = t.rows_per_block * t.cols;
  t.blocks = (s.batch * t.rows + t.rows_per_block - 1) / t.rows_per_block;
  t.line_width = 2 * t.cols + 2;
  t.u_stride = skewed(s.out_channels * s.in_channels);
  t.v_stride = skewed(s.in_channels * t.tiles);
  t.m_stride = skewed(s.out_channels * t.tiles);
  t.lines = std::max(s.in_channels, s.out_channels) * 4 * t.line_width;
  t.worker = kPositions * (t.v_stride + t.m_stride) + t.lines + s.in_w;
  return t;
}

std::int64_t weight_groups(const Tiling& t) { return std::min(kWeightGroups, t.blocks); }

// U[p][co][ci] = (G g G^T)[p] for g = the kernel of (co, ci). Per output channel, a run of
// input channels at a time, gathered first so that the arithmetic runs along contiguous
// floats (vectorized).
void transform_weights(const Conv2dShape& s, const Tiling& t, const float* weight, bool flipped, float* u) {
  const std::int64_t cin = s.in_channels, cout = s.out_channels, plane = t.u_stride;
  constexpr std::int64_t kRun = 64;
  parallel_for(cout, cin * kPositions, [&](std::int64_t co) {
    for (std::int64_t first = 0; first < cin; first += kRun) {
      const std::int64_t run = std::min(kRun, cin - first);
      float g[9][kRun], h[12][kRun];  // the kernels; G g, row by row
      for (std::int64_t c = 0; c < run; ++c) {
        const std::int64_t ci = first + c;
        for (int tap = 0; tap < 9; ++tap)
          g[tap][c] = flipped ? weight[(ci * cout + co) * 9 + 8 - tap] : weight[(co * cin + ci) * 9 + tap];
      }
      for (int j = 0; j < 3; ++j)
        for (std::int64_t c = 0; c < run; ++c) {
          h[j][c] = g[j][c];
          h[3 + j][c] = 0.5f * (g[j][c] + g[3 + j][c] + g[6 + j][c]);
          h[6 + j][c] = 0.5f * (g[j][c] - g[3 + j][c] + g[6 + j][c]);
          h[9 + j][c] = g[6 + j][c];
        }
      for (int i = 0; i < 4; ++i) {  // (G g) G^T
        float* __restrict u0 = u + (i * 4) * plane + co * cin + first;
        float* __restrict u1 = u0 + plane;
        float* __restrict u2 = u1 + plane;
        float* __restrict u3 = u2 + plane;
        const float *h0 = h[3 * i], *h1 = h[3 * i + 1], *h2 = h[3 * i + 2];
        for (std::int64_t c = 0; c < run; ++c) {
          u0[c] = h0[c];
          u1[c] = 0.5f * (h0[c] + h1[c] + h2[c]);
          u2[c] = 0.5f * (h0[c] - h1[c] + h2[c]);
          u3[c] = h2[c];
        }
      }
    }
  });
}

// The passes below take their rows as restrict parameters: GCC vectorized none of these
// loops with the same pointers as restrict-qualified locals ("no vectype for stmt"). Each
// pass runs over a whole tile row's channels before the next reads its lines: a line read
// right after it was written, at another alignment, stalled on store forwarding (a third of
// the transforms' time, perf).

// B^T down the columns of 4 input rows; line column x + 1 is input column x, and columns 0
// and w + 1 .. are padding, zeroed once.
void column_pass(const float* __restrict a0, const float* __restrict a1, const float* __restrict a2,
                 const float* __restrict a3, std::int64_t w, std::int64_t width, float* __restrict r) {
  for (std::int64_t x = 0; x < w; ++x) {
    r[x + 1] = a0[x] - a2[x];
    r[width + x + 1] = a1[x] + a2[x];
    r[2 * width + x + 1] = a2[x] - a1[x];
    r[3 * width + x + 1] = a1[x] - a3[x];
  }
}

// B along one line for every tile of it (columns 2 tx .. 2 tx + 3), into v0..v3.
void row_pass(const float* __restrict r, std::int64_t tw, float* __restrict v0, float* __restrict v1,
              float* __restrict v2, float* __restrict v3) {
  for (std::int64_t tx = 0; tx < tw; ++tx) {
    v0[tx] = r[2 * tx] - r[2 * tx + 2];
    v1[tx] = r[2 * tx + 1] + r[2 * tx + 2];
    v2[tx] = r[2 * tx + 2] - r[2 * tx + 1];
    v3[tx] = r[2 * tx + 1] - r[2 * tx + 3];
  }
}

// A^T m A for a row of tiles (position p of tile tx at m[p next + tx]): the 2x2 outputs as
// four lines of tw, y[(i, j) tw + tx].
void output_pass(const float* __restrict m, std::int64_t next, std::int64_t tw, float* __restrict y) {
  for (std::int64_t tx = 0; tx < tw; ++tx) {
    float s0[4], s1[4];  // A^T down the columns
    for (int j = 0; j < 4; ++j) {
      const float m0 = m[j * next + tx], m1 = m[(4 + j) * next + tx], m2 = m[(8 + j) * next + tx],
                  m3 = m[(12 + j) * next + tx];
      s0[j] = m0 + m1 + m2;
      s1[j] = m1 - m2 - m3;
    }
    y[tx] = s0[0] + s0[1] + s0[2];
    y[tw + tx] = s0[1] - s0[2] - s0[3];
    y[2 * tw + tx] = s1[0] + s1[1] + s1[2];
    y[3 * tw + tx] = s1[1] - s1[2] - s1[3];
  }
}

// An output row of w columns from its tiles' left and right columns.
void interleave(const float* __restrict left, const float* __restrict right, std::int64_t w, float* __restrict out) {
  for (std::int64_t tx = 0; tx < w / 2; ++tx) {
    out[2 * tx] = left[tx];
    out[2 * tx + 1] = right[tx];
  }
  if (w % 2) out[w - 1] = left[w / 2];
}

// V[p][c][tile] for the tiles of global tile rows [first, end), B^T d B of each.
void transform_inputs(const Conv2dShape& s, const Tiling& t, const float* x, std::int64_t first, std::int64_t end,
                      float* v, float* lines) {
  const std::int64_t tw = t.cols, th = t.rows, w = s.in_w, width = t.line_width;
  const std::int64_t cin = s.in_channels, tiles = t.tiles, next = t.v_stride;
  float* zeros = lines + t.lines;
  std::fill(zeros, zeros + w, 0.0f);
  for (float* r = lines; r < lines + 4 * cin * width; r += width) {  // the padding columns
    r[0] = 0.0f;
    std::fill(r + w + 1, r + width, 0.0f);
  }
  for (std::int64_t row = first; row < end; ++row) {
    const std::int64_t n = row / th, ty = row % th, at = (row - first) * tw;
    for (std::int64_t c = 0; c < cin; ++c) {
      const float* plane = x + (n * cin + c) * s.in_h * w;
      const float* a[4];
      for (int i = 0; i < 4; ++i) {
        const std::int64_t y = 2 * ty - 1 + i;
        a[i] = y >= 0 && y < s.in_h ? plane + y * w : zeros;
      }
      column_pass(a[0], a[1], a[2], a[3], w, width, lines + c * 4 * width);
    }
    for (std::int64_t c = 0; c < cin; ++c)
      for (int i = 0; i < 4; ++i) {
        float* v0 = v + (i * 4) * next + c * tiles + at;  // position (i, j) at v0 + j next
        row_pass(lines + (c * 4 + i) * width, tw, v0, v0 + next, v0 + 2 * next, v0 + 3 * next);
      }
  }
}

// y's 2x2 blocks of the tiles of global tile rows [first, end).
void transform_outputs(const Conv2dShape& s, const Tiling& t, const float* m, std::int64_t first, std::int64_t end,
                       float* y, float* lines) {
  const std::int64_t tw = t.cols, th = t.rows, w = s.in_w, h = s.in_h;
  const std::int64_t cout = s.out_channels, tiles = t.tiles;
  for (std::int64_t row = first; row < end; ++row) {
    const std::int64_t n = row / th, ty = row % th, at = (row - first) * tw;
    for (std::int64_t co = 0; co < cout; ++co) output_pass(m + co * tiles + at, t.m_stride, tw, lines + co * 4 * tw);
    for (std::int64_t co = 0; co < cout; ++co) {
      const float* out = lines + co * 4 * tw;
      float* plane = y + ((n * cout + co) * h + 2 * ty) * w;
      interleave(out, out + tw, w, plane);
      if (2 * ty + 1 < h) interleave(out + 2 * tw, out + 3 * tw, w, plane + w);
    }
  }
}

// The weight gradient's transform of dY, the adjoint of transform_outputs: per tile, its
// 2x2 block of dY (zero outside the image) as A dY A^T, into dM[p][co][tile].
void split_pass(const float* __restrict row, std::int64_t w, std::int64_t tw, float* __restrict even,
                float* __restrict odd) {
  for (std::int64_t tx = 0; tx < w / 2; ++tx) {
    even[tx] = row[2 * tx];
    odd[tx] = row[2 * tx + 1];
  }
  if (w % 2) {
    even[tw - 1] = row[w - 1];
    odd[tw - 1] = 0.0f;
  }
}

void gradient_pass(const float* __restrict e0, const float* __restrict o0, const float* __restrict e1,
                   const float* __restrict o1, std::int64_t next, std::int64_t tw, float* __restrict dm) {
  for (std::int64_t tx = 0; tx < tw; ++tx) {
    // A dY: rows (e0, o0), (e0 + e1, o0 + o1), (e0 - e1, o0 - o1), (-e1, -o1); then each
    // row (u, v) times A^T: (u, u + v, u - v, -v).
    const float u[4] = {e0[tx], e0[tx] + e1[tx], e0[tx] - e1[tx], -e1[tx]};
    const float v[4] = {o0[tx], o0[tx] + o1[tx], o0[tx] - o1[tx], -o1[tx]};
    for (int i = 0; i < 4; ++i) {
      dm[(4 * i) * next + tx] = u[i];
      dm[(4 * i + 1) * next + tx] = u[i] + v[i];
      dm[(4 * i + 2) * next + tx] = u[i] - v[i];
      dm[(4 * i + 3) * next + tx] = -v[i];
    }
  }
}

void transform_gradients(const Conv2dShape& s, const Tiling& t, const float* dy, std::int64_t first,
                         std::int64_t end, float* dm, float* lines) {
  const std::int64_t tw = t.cols, th = t.rows, w = s.in_w, h = s.in_h;
  const std::int64_t cout = s.out_channels, tiles = t.tiles;
  for (std::int64_t row = first; row < end; ++row) {
    const std::int64_t n = row / th, ty = row % th, at = (row - first) * tw;
    for (std::int64_t co = 0; co < cout; ++co) {
      const float* plane = dy + ((n * cout + co) * h + 2 * ty) * w;
      float* l = lines + co * 4 * tw;  // even and odd columns of rows 2 ty and 2 ty + 1
      split_pass(plane, w, tw, l, l + tw);
      if (2 * ty + 1 < h) split_pass(plane + w, w, tw, l + 2 * tw, l + 3 * tw);
      else std::fill(l + 2 * tw, l + 4 * tw, 0.0f);
    }
    for (std::int64_t co = 0; co < cout; ++co) {
      const float* l = lines + co * 4 * tw;
      gradient_pass(l, l + tw, l + 2 * tw, l + 3 * tw, t.m_stride, tw, dm + co * tiles + at);
    }
  }
}

// dweight[co][ci] = G^T dU G, dU the groups' sums added in group order.
void transform_weight_gradient(const Conv2dShape& s, const Tiling& t, const float* sums, float* dweight) {
  const std::int64_t cin = s.in_channels, cout = s.out_channels, plane = t.u_stride, size = kPositions * plane;
  const std::int64_t groups = weight_groups(t);
  parallel_for(cout, cin * kPositions * groups, [&](std::int64_t co) {
    for (std::int64_t ci = 0; ci < cin; ++ci) {
      float du[4][4];
      for (int p = 0; p < kPositions; ++p) {
        const std::int64_t at = p * plane + co * cin + ci;
        float total = sums[at];
        for (std::int64_t g = 1; g < groups; ++g) total += sums[g * size + at];
        du[p / 4][p % 4] = total;
      }
      // G^T u for a 4-vector u: (u0 + (u1 + u2) / 2, (u1 - u2) / 2, (u1 + u2) / 2 + u3).
      float h[3][4];  // G^T dU
      for (int j = 0; j < 4; ++j) {
        h[0][j] = du[0][j] + 0.5f * (du[1][j] + du[2][j]);
        h[1][j] = 0.5f * (du[1][j] - du[2][j]);
        h[2][j] = 0.5f * (du[1][j] + du[2][j]) + du[3][j];
      }
      float* out = dweight + (co * cin + ci) * 9;
      for (int i = 0; i < 3; ++i) {  // (G^T dU) G
        out[i * 3] = h[i][0] + 0.5f * (h[i][1] + h[i][2]);
        out[i * 3 + 1] = 0.5f * (h[i][1] - h[i][2]);
        out[i * 3 + 2] = 0.5f * (h[i][1] + h[i][2]) + h[i][3];
      }
    }
  });
}

}  // namespace

// Measured (bench/conv_kernels.cpp, batch 4, docs/BENCHMARKS.md "Winograd"): faster on
// resnet18's 3x3 convolutions at 56x56, 28x28 and 14x14 (forward and input gradient 20-50%
// at 1 and 2 threads), slower at 7x7 (a 4x4 tile per 2x2 outputs wastes a third of the work
// on the odd border) and on resnet18_cifar's 16 to 64 channels at 32x32 to 8x8 (batch 32:
// those run by kernel rows, images on the threads).
bool winograd_applies(const Conv2dShape& s) {
  return s.kernel_h == 3 && s.kernel_w == 3 && s.stride_h == 1 && s.stride_w == 1 && s.dilation == 1 &&
         s.pad_h == 1 && s.pad_w == 1 && s.groups == 1 && s.in_channels >= 32 && s.out_channels >= 32 &&
         s.in_h >= 14 && s.in_w >= 14 &&
         !gemm_runs_on_one_thread(s.out_channels, s.in_h * s.in_w, s.in_channels * 9);
}

// The weight gradient writes a group's sums of dU (16 x channels^2 floats) for every group:
// at 64 and 128 channels 15-25% faster than over im2col, at 256 (4 MiB a group) as fast at
// one thread and slower at two, where oneDNN shares the one GEMM over im2col well.
bool winograd_weight_gradient_applies(const Conv2dShape& s) {
  return winograd_applies(s) && std::max(s.in_channels, s.out_channels) <= 128;
}

std::int64_t winograd_scratch_elements(const Conv2dShape& s, std::int64_t workers) {
  const Tiling t = tiling(s);
  // U (the forward) or the groups' sums of dU (the weight gradient), then the workers'.
  const std::int64_t weights = winograd_weight_gradient_applies(s) ? weight_groups(t) : 1;
  return weights * kPositions * t.u_stride + workers * t.worker;
}

void winograd_convolve(const Conv2dShape& s, const float* x, const float* weight, bool flipped, float* y,
                       float* scratch, std::int64_t workers) {
  const Tiling t = tiling(s);
  const std::int64_t all_rows = s.batch * t.rows;
  float* u = scratch;
  transform_weights(s, t, weight, flipped, u);
  // Always inside a parallel region, even of one thread: oneDNN then runs every GEMM on the
  // calling thread, so no product is split between threads in a way that depends on their
  // number.
#pragma omp parallel for schedule(static) num_threads(static_cast<int>(std::max<std::int64_t>(1, workers)))
  for (std::int64_t b = 0; b < t.blocks; ++b) {
    float* v = scratch + kPositions * t.u_stride + omp_get_thread_num() * t.worker;
    float* m = v + kPositions * t.v_stride;
    float* lines = m + kPositions * t.m_stride;
    const std::int64_t first = b * t.rows_per_block, end = std::min(first + t.rows_per_block, all_rows);
    const std::int64_t n = (end - first) * t.cols;
    transform_inputs(s, t, x, first, end, v, lines);
    for (std::int64_t p = 0; p < kPositions; ++p)
      gemm(false, false, s.out_channels, n, s.in_channels, 1.0f, u + p * t.u_stride, s.in_channels,
           v + p * t.v_stride, t.tiles, 0.0f, m + p * t.m_stride, t.tiles);
    transform_outputs(s, t, m, first, end, y, lines);
  }
}

void winograd_weight_gradient(const Conv2dShape& s, const float* x, const float* dy, float* dweight, float* scratch,
                              std::int64_t workers) {
  const Tiling t = tiling(s);
  const std::int64_t all_rows = s.batch * t.rows, groups = weight_groups(t), size = kPositions * t.u_stride;
  float* sums = scratch;
  // Inside a parallel region even of one thread, as winograd_convolve.
#pragma omp parallel for schedule(static) num_threads(static_cast<int>(std::max<std::int64_t>(1, workers)))
  for (std::int64_t group = 0; group < groups; ++group) {
    float* v = scratch + groups * size + omp_get_thread_num() * t.worker;
    float* dm = v + kPositions * t.v_stride;
    float* lines = dm + kPositions * t.m_stride;
    const std::int64_t begin = group * t.blocks / groups, end_block = (group + 1) * t.blocks / groups;
    for (std::int64_t b = begin; b < end_block; ++b) {
      const std::int64_t first = b * t.rows_per_block, end = std::min(first + t.rows_per_block, all_rows);
      const std::int64_t n = (end - first) * t.cols;
      transform_inputs(s, t, x, first, end, v, lines);
      transform_gradients(s, t, dy, first, end, dm, lines);
      // The group's first block overwrites its sums, the others add.
      for (std::int64_t p = 0; p < kPositions; ++p)
        gemm(false, true, s.out_channels, s.in_channels, n, 1.0f, dm + p * t.m_stride, t.tiles, v + p * t.v_stride,
             t.tiles, b == begin ? 0.0f : 1.0f, sums + group * size + p * t.u_stride, s.in_channels);
    }
  }
  transform_weight_gradient(s, t, sums, dweight);
}

}  // namespace poet::kernels::detail
