// The kernels that share their loops between OpenMP's threads (src/kernels/parallel_for.h)
// give the same bits with one thread and with several: each piece of output is computed by
// one thread, the same way. Sizes are above the threshold at which the threads start.
#include <gtest/gtest.h>
#include <omp.h>

#include <functional>
#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_activation.h"
#include "poet/kernels/kernels_conv.h"
#include "poet/kernels/kernels_layout.h"
#include "poet/kernels/kernels_dropout.h"
#include "poet/kernels/kernels_norm.h"
#include "poet/kernels/kernels_optimizer.h"

namespace poet::kernels {
namespace {

using testing::random_values;

// Runs `compute` (which fills its outputs) with 1 thread, then 2 and 3, and compares.
void same_bits_for_every_thread_count(const std::function<std::vector<std::vector<float>>()>& compute) {
  const int threads_before = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<std::vector<float>> one = compute();
  for (int threads : {2, 3}) {
    omp_set_num_threads(threads);
    const std::vector<std::vector<float>> many = compute();
    ASSERT_EQ(many.size(), one.size());
    for (std::size_t k = 0; k < one.size(); ++k)
      EXPECT_TRUE(testing::bit_identical(many[k], one[k])) << "output " << k << ", " << threads << " threads";
  }
  omp_set_num_threads(threads_before);
}

TEST(KernelThreads, BatchNormGivesTheSameBitsOnEveryThreadCount) {
  const BatchNormShape s{.batch = 4, .channels = 24, .spatial = 30 * 30};
  const std::size_t size = 4 * 24 * 900;
  const std::vector<float> x = random_values(size, 1), dy = random_values(size, 2), gamma = random_values(24, 3),
                           beta = random_values(24, 4);
  same_bits_for_every_thread_count([&] {
    std::vector<float> stats(48), y(size), dx(size), dgamma(24), dbeta(24);
    batch_norm_stats(s, x, stats);
    batch_norm_forward(s, x, stats, gamma, beta, y);
    batch_norm_backward_input(s, dy, x, stats, gamma, dx);
    batch_norm_backward_params(s, dy, x, stats, dgamma, dbeta);
    return std::vector<std::vector<float>>{stats, y, dx, dgamma, dbeta};
  });
}

TEST(KernelThreads, ElementWiseKernelsGiveTheSameBitsOnEveryThreadCount) {
  // Above the elements that go to the threads (kParallelMinElements), with a tail that
  // fills neither a block nor a mask byte.
  const std::size_t size = 300001;
  const std::vector<float> x = random_values(size, 5), dy = random_values(size, 6);
  same_bits_for_every_thread_count([&] {
    std::vector<float> y(size), dx(size), sum(size), gelu(size), dropped(size);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(mask_bytes(size)));
    relu6_forward(x, y);
    relu6_mask(y, mask);
    masked_backward(dy, mask, dx);
    add_forward(x, dy, sum);
    gelu_forward(x, gelu);
    dropout_forward({.seed = 7, .step = 3, .node = 2}, 0.1f, x, dropped);
    return std::vector<std::vector<float>>{y, dx, sum, std::vector<float>(mask.begin(), mask.end()), gelu, dropped};
  });
}

TEST(KernelThreads, ParameterUpdatesGiveTheSameBitsOnEveryThreadCount) {
  const std::size_t size = 300001;
  const std::vector<float> g = random_values(size, 11), p0 = random_values(size, 12), v0 = random_values(size, 13);
  same_bits_for_every_thread_count([&] {
    std::vector<float> p = p0, v = v0;
    momentum_update(0.01f, 0.9f, g, v, p);
    sgd_update(0.01f, g, p);
    return std::vector<std::vector<float>>{p, v};
  });
}

TEST(KernelThreads, ConvolutionGivesTheSameBitsOnEveryThreadCount) {
  // Depthwise (direct loops), a grouped convolution (im2col's loops, the input gradient as a
  // convolution), and those whose images are shared between the threads (small GEMMs, the
  // weight gradient summed in groups of images; 5 images, uneven groups): with 16 input
  // channels its weight gradient goes channels-last where the CPU has AVX2
  // (conv_channels_last.h), with 24 by stacked kernel rows; 32 -> 32 all three passes (the
  // forward and input gradient with AVX-512).
  // Not here: a convolution too large to share its images (96 -> 256 at 7x7, 5 images side by
  // side in chunks of 4). Its products are shared by oneDNN itself, whose sgemm splits k on
  // some CPUs and thread counts (an AVX2 EPYC at 3 threads): bits identical across thread
  // counts for those would cost 1.06-1.18x in speed (docs/BENCHMARKS.md, "Large products
  // split by C's blocks"), so they are not promised.
  const Conv2dShape shapes[] = {
      {.batch = 2, .in_channels = 16, .in_h = 40, .in_w = 40, .out_channels = 16, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 16, .bias = true},
      {.batch = 2, .in_channels = 16, .in_h = 40, .in_w = 40, .out_channels = 16, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 2, .bias = true},
      {.batch = 5, .in_channels = 16, .in_h = 20, .in_w = 20, .out_channels = 16, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true},
      {.batch = 5, .in_channels = 24, .in_h = 20, .in_w = 20, .out_channels = 16, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true},
      {.batch = 5, .in_channels = 32, .in_h = 8, .in_w = 8, .out_channels = 32, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true},
      {.batch = 5, .in_channels = 8, .in_h = 20, .in_w = 20, .out_channels = 24, .kernel_h = 3, .kernel_w = 3,
       .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = false},
  };
  for (const Conv2dShape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << "shape " << &s - shapes);
    const std::size_t x_size = s.batch * s.in_channels * s.in_h * s.in_w,
                      y_size = s.batch * s.out_channels * s.out_h() * s.out_w(),
                      w_size = s.out_channels * s.in_channels_per_group() * 9, b_size = s.bias ? s.out_channels : 0;
    const std::vector<float> x = random_values(x_size, 7), w = random_values(w_size, 8),
                             b = random_values(b_size, 9), dy = random_values(y_size, 10);
    same_bits_for_every_thread_count([&] {
      std::vector<float> y(y_size), dx(x_size), dw(w_size), db(b_size), scratch(conv2d_scratch_elements(s));
      conv2d_forward(s, x, w, b, y, scratch);
      conv2d_backward_input(s, dy, w, dx, scratch);
      conv2d_backward_params(s, dy, x, dw, db, scratch);
      return std::vector<std::vector<float>>{y, dx, dw, db};
    });
  }
}

// Bilinear upsampling: each plane by one thread, its gradient spread in a fixed order.
TEST(KernelThreads, BilinearUpsamplingGivesTheSameBitsOnEveryThreadCount) {
  const UpsampleShape s{.planes = 24, .in_h = 40, .in_w = 40, .factor_h = 2, .factor_w = 2};
  const std::vector<float> x = random_values(24 * 1600, 11), dy = random_values(24 * 6400, 12);
  same_bits_for_every_thread_count([&] {
    std::vector<float> y(dy.size()), dx(x.size());
    upsample_bilinear_forward(s, x, y);
    upsample_bilinear_backward(s, dy, dx);
    return std::vector<std::vector<float>>{y, dx};
  });
}

// A convolution by Winograd's F(2x2, 3x3): blocks of tiles on the threads, the weight
// gradient summed in fixed groups of blocks.
TEST(KernelThreads, WinogradGivesTheSameBitsOnEveryThreadCount) {
  const Conv2dShape s{.batch = 3, .in_channels = 32, .in_h = 29, .in_w = 27, .out_channels = 64, .kernel_h = 3,
                      .kernel_w = 3, .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .groups = 1, .bias = true};
  const std::size_t x_size = s.batch * s.in_channels * s.in_h * s.in_w,
                    y_size = s.batch * s.out_channels * s.in_h * s.in_w;
  const std::vector<float> x = random_values(x_size, 7), w = random_values(s.out_channels * s.in_channels * 9, 8),
                           b = random_values(s.out_channels, 9), dy = random_values(y_size, 10);
  same_bits_for_every_thread_count([&] {
    std::vector<float> y(y_size), dx(x_size), dw(w.size()), db(b.size()), scratch(conv2d_scratch_elements(s));
    conv2d_forward(s, x, w, b, y, scratch);
    conv2d_backward_input(s, dy, w, dx, scratch);
    conv2d_backward_params(s, dy, x, dw, db, scratch);
    return std::vector<std::vector<float>>{y, dx, dw, db};
  });
}

}  // namespace
}  // namespace poet::kernels
