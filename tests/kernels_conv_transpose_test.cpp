// The transposed convolution (kernels_conv.h): its forward against the definition (each input
// pixel spreads its channels over a window of the output), its gradients against finite
// differences, and the same bits on every thread count. tiny_decoder holds it to PyTorch.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "kernel_gradcheck.h"
#include "poet/kernels/kernels_conv.h"

namespace poet::kernels {
namespace {

using testing::gradient_matches;
using testing::random_values;

// A transposed convolution of an [batch, in, h, w] input, as kernels_conv.h takes it: the
// convolution from its output back to its input.
struct Transposed {
  std::int64_t batch, in, h, w, out;
  int kernel, stride_h, stride_w, pad, output_padding, groups, dilation;
  bool bias;

  std::int64_t out_h() const { return (h - 1) * stride_h - 2 * pad + dilation * (kernel - 1) + 1 + output_padding; }
  std::int64_t out_w() const { return (w - 1) * stride_w - 2 * pad + dilation * (kernel - 1) + 1 + output_padding; }
  Conv2dShape as_conv() const {
    return {.batch = batch, .in_channels = out, .in_h = out_h(), .in_w = out_w(), .out_channels = in,
            .kernel_h = kernel, .kernel_w = kernel, .stride_h = stride_h, .stride_w = stride_w, .pad_h = pad,
            .pad_w = pad, .groups = groups, .bias = false, .dilation = dilation};
  }
  std::size_t x_size() const { return static_cast<std::size_t>(batch * in * h * w); }
  std::size_t y_size() const { return static_cast<std::size_t>(batch * out * out_h() * out_w()); }
  std::size_t w_size() const { return static_cast<std::size_t>(in * (out / groups) * kernel * kernel); }
};

const Transposed kShapes[] = {
    // A decoder's x2: 3x3, stride 2, padding 1, output padding 1 (torch's usual), grouped.
    {.batch = 2, .in = 4, .h = 3, .w = 4, .out = 6, .kernel = 3, .stride_h = 2, .stride_w = 2, .pad = 1,
     .output_padding = 1, .groups = 2, .dilation = 1, .bias = true},
    // 4x4 stride 2 (DCGAN's), dilated 3x3 without a bias, and a depthwise one.
    {.batch = 1, .in = 3, .h = 4, .w = 3, .out = 2, .kernel = 4, .stride_h = 2, .stride_w = 2, .pad = 1,
     .output_padding = 0, .groups = 1, .dilation = 1, .bias = true},
    {.batch = 2, .in = 2, .h = 4, .w = 4, .out = 3, .kernel = 3, .stride_h = 1, .stride_w = 1, .pad = 2,
     .output_padding = 0, .groups = 1, .dilation = 2, .bias = false},
    {.batch = 2, .in = 4, .h = 3, .w = 3, .out = 4, .kernel = 3, .stride_h = 3, .stride_w = 3, .pad = 0,
     .output_padding = 2, .groups = 4, .dilation = 1, .bias = true},
    // A stride per axis: a spectrogram decoder's rows doubled, its columns kept.
    {.batch = 2, .in = 3, .h = 3, .w = 4, .out = 2, .kernel = 3, .stride_h = 2, .stride_w = 1, .pad = 1,
     .output_padding = 0, .groups = 1, .dilation = 1, .bias = true},
};

TEST(KernelConvTranspose2d, ForwardMatchesTheDefinition) {
  for (const Transposed& t : kShapes) {
    const std::vector<float> x = random_values(t.x_size(), 1), weight = random_values(t.w_size(), 2),
                             bias = t.bias ? random_values(static_cast<std::size_t>(t.out), 3) : std::vector<float>{};
    const Conv2dShape s = t.as_conv();
    std::vector<float> y(t.y_size()), scratch(conv2d_scratch_elements(s));
    conv_transpose2d_forward(s, x, weight, bias, y, scratch);
    std::vector<double> want(t.y_size(), 0.0);
    const std::int64_t in_group = t.in / t.groups, out_group = t.out / t.groups, oh = t.out_h(), ow = t.out_w();
    for (std::int64_t n = 0; n < t.batch; ++n)
      for (std::int64_t o = 0; o < t.out; ++o)
        for (std::int64_t p = 0; p < oh * ow; ++p)
          want[static_cast<std::size_t>((n * t.out + o) * oh * ow + p)] = t.bias ? bias[static_cast<std::size_t>(o)] : 0;
    for (std::int64_t n = 0; n < t.batch; ++n)
      for (std::int64_t c = 0; c < t.in; ++c)
        for (std::int64_t iy = 0; iy < t.h; ++iy)
          for (std::int64_t ix = 0; ix < t.w; ++ix)
            for (std::int64_t k = 0; k < out_group; ++k)
              for (int i = 0; i < t.kernel; ++i)
                for (int j = 0; j < t.kernel; ++j) {
                  const std::int64_t oy = iy * t.stride_h - t.pad + i * t.dilation;
                  const std::int64_t ox = ix * t.stride_w - t.pad + j * t.dilation;
                  if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                  const std::int64_t o = c / in_group * out_group + k;
                  want[static_cast<std::size_t>(((n * t.out + o) * oh + oy) * ow + ox)] +=
                      static_cast<double>(x[static_cast<std::size_t>(((n * t.in + c) * t.h + iy) * t.w + ix)]) *
                      weight[static_cast<std::size_t>(((c * out_group + k) * t.kernel + i) * t.kernel + j)];
                }
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(y[i] - want[i]));
    EXPECT_LT(worst, 1e-5) << "in " << t.in << " out " << t.out << " stride " << t.stride_h << "x" << t.stride_w;
  }
}

TEST(KernelConvTranspose2d, GradientsMatchFiniteDifferences) {
  for (const Transposed& t : kShapes) {
    const Conv2dShape s = t.as_conv();
    const std::vector<float> x = random_values(t.x_size(), 4), weight = random_values(t.w_size(), 5),
                             dy = random_values(t.y_size(), 6),
                             bias = t.bias ? random_values(static_cast<std::size_t>(t.out), 7) : std::vector<float>{};
    std::vector<float> scratch(conv2d_scratch_elements(s)), dx(t.x_size()), dweight(t.w_size()), dbias(bias.size());
    conv_transpose2d_backward_input(s, dy, weight, dx, scratch);
    conv_transpose2d_backward_params(s, dy, x, dweight, dbias, scratch);
    const auto forward = [&](std::span<const float> in, std::span<const float> w, std::span<const float> b,
                             std::span<float> out) { conv_transpose2d_forward(s, in, w, b, out, scratch); };
    EXPECT_TRUE(gradient_matches([&](auto in, auto out) { forward(in, weight, bias, out); }, x, t.y_size(), dy, dx));
    EXPECT_TRUE(
        gradient_matches([&](auto in, auto out) { forward(x, in, bias, out); }, weight, t.y_size(), dy, dweight));
    if (t.bias) {
      EXPECT_TRUE(gradient_matches([&](auto in, auto out) { forward(x, weight, in, out); }, bias, t.y_size(), dy,
                                   dbias));
    }
  }
}

// Large enough for the threads: the bias and its gradient (4 x 32 planes of 48 x 48) share
// channels between them, above kParallelMinElements. Each product stays below what oneDNN
// shares itself (kGemmSmallProduct: 8 x 288 x 2,304 per image), whose bits the thread count
// may change (kernels_threads_test.cpp).
TEST(KernelConvTranspose2d, GivesTheSameBitsOnEveryThreadCount) {
  const Transposed t{.batch = 4, .in = 8, .h = 24, .w = 24, .out = 32, .kernel = 3, .stride_h = 2, .stride_w = 2,
                     .pad = 1, .output_padding = 1, .groups = 1, .dilation = 1, .bias = true};
  const Conv2dShape s = t.as_conv();
  const std::vector<float> x = random_values(t.x_size(), 8), weight = random_values(t.w_size(), 9),
                           dy = random_values(t.y_size(), 10), bias = random_values(32, 11);
  const int threads_before = omp_get_max_threads();
  std::vector<std::vector<float>> first;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    std::vector<float> y(t.y_size()), dx(t.x_size()), dw(t.w_size()), db(32), scratch(conv2d_scratch_elements(s));
    conv_transpose2d_forward(s, x, weight, bias, y, scratch);
    conv_transpose2d_backward_input(s, dy, weight, dx, scratch);
    conv_transpose2d_backward_params(s, dy, x, dw, db, scratch);
    const std::vector<std::vector<float>> outputs = {y, dx, dw, db};
    if (first.empty()) first = outputs;
    for (std::size_t k = 0; k < outputs.size(); ++k)
      EXPECT_TRUE(testing::bit_identical(outputs[k], first[k])) << "output " << k << ", " << threads << " threads";
  }
  omp_set_num_threads(threads_before);
}

}  // namespace
}  // namespace poet::kernels
