// The convolution kernels alone on resnet18_cifar's and lenet5's layer shapes (batch 32):
// the best of N calls of the forward, input-gradient and weight-gradient kernels, at
// OMP_NUM_THREADS threads. The measurement behind the choices in src/kernels/kernels_conv.cpp
// (docs/BENCHMARKS.md, "Kernel speed"). Usage:
//   OMP_NUM_THREADS=1 build/bench/poet_bench_conv [calls, default 20]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "poet/kernels/kernels_conv.h"

namespace {

using poet::kernels::Conv2dShape;

template <typename F>
double best_ms(int calls, F f) {
  double best = 1e9;
  for (int r = 0; r < calls; ++r) {
    const auto began = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  }
  return best * 1e3;
}

Conv2dShape conv(int cin, int size, int cout, int kernel, int stride, int pad, bool bias) {
  return {.batch = 32, .in_channels = cin, .in_h = size, .in_w = size, .out_channels = cout, .kernel_h = kernel,
          .kernel_w = kernel, .stride = stride, .pad_h = pad, .pad_w = pad, .groups = 1, .bias = bias};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace poet::kernels;
  const int calls = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  const struct {
    const char* name;
    Conv2dShape s;
  } layers[] = {
      {"resnet18_cifar 3->16 at 32x32", conv(3, 32, 16, 3, 1, 1, false)},
      {"resnet18_cifar 16->16 at 32x32", conv(16, 32, 16, 3, 1, 1, false)},
      {"resnet18_cifar 16->32 stride 2", conv(16, 32, 32, 3, 2, 1, false)},
      {"resnet18_cifar 32->32 at 16x16", conv(32, 16, 32, 3, 1, 1, false)},
      {"resnet18_cifar 64->64 at 8x8", conv(64, 8, 64, 3, 1, 1, false)},
      {"lenet5 1->6 5x5 at 28x28", conv(1, 28, 6, 5, 1, 2, true)},
      {"lenet5 6->16 5x5 at 14x14", conv(6, 14, 16, 5, 1, 0, true)},
  };
  std::printf("%d threads, best of %d calls\n| layer | forward | input gradient | weight gradient |\n| --- | --- | --- | --- |\n",
              omp_get_max_threads(), calls);
  std::mt19937 random(1);
  std::normal_distribution<float> normal;
  for (const auto& [name, s] : layers) {
    std::vector<float> x(s.batch * s.in_channels * s.in_h * s.in_w),
        weight(s.out_channels * s.in_channels_per_group() * s.kernel_h * s.kernel_w),
        bias(s.bias ? s.out_channels : 0), y(s.batch * s.out_channels * s.out_h() * s.out_w());
    std::vector<float> dx(x.size()), dweight(weight.size()), dbias(bias.size()), scratch(conv2d_scratch_elements(s));
    for (auto* values : {&x, &weight, &bias, &y})
      for (float& v : *values) v = normal(random);
    const double forward = best_ms(calls, [&] { conv2d_forward(s, x, weight, bias, y, scratch); });
    const double input = best_ms(calls, [&] { conv2d_backward_input(s, y, weight, dx, scratch); });
    const double params = best_ms(calls, [&] { conv2d_backward_params(s, y, x, dweight, dbias, scratch); });
    std::printf("| %s | %.3f ms | %.3f ms | %.3f ms |\n", name, forward, input, params);
  }
}
