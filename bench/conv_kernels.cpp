// The convolution kernels alone on resnet18_cifar's and lenet5's layer shapes (batch 32):
// the best of N calls of the forward, input-gradient and weight-gradient kernels, at
// OMP_NUM_THREADS threads. The measurement behind the choices in src/kernels/kernels_conv.cpp
// (docs/BENCHMARKS.md, "Kernel speed"). Usage:
//   OMP_NUM_THREADS=1 build/bench/poet_bench_conv [calls, default 20]
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "conv_layers.h"
#include "poet/kernels/kernels_conv.h"

int main(int argc, char** argv) {
  using namespace poet::kernels;
  using poet::bench::best_ms;
  const int calls = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  std::printf("%d threads, best of %d calls\n| layer | forward | input gradient | weight gradient |\n| --- | --- | --- | --- |\n",
              omp_get_max_threads(), calls);
  std::mt19937 random(1);
  std::normal_distribution<float> normal;
  for (const auto& [name, s] : poet::bench::conv_layers()) {
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
