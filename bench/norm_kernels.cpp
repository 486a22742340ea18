// Batch norm's kernels alone on resnet18_cifar's shapes (batch 32): the best of N calls of
// the statistics, forward, input-gradient and parameter-gradient kernels, at
// OMP_NUM_THREADS threads (docs/BENCHMARKS.md, "Kernel speed"). Usage:
//   OMP_NUM_THREADS=1 build/bench/poet_bench_norm [calls, default 20]
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "conv_layers.h"
#include "poet/kernels/kernels_norm.h"

int main(int argc, char** argv) {
  using namespace poet::kernels;
  using poet::bench::best_ms;
  const int calls = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  std::printf("%d threads, best of %d calls\n| shape | statistics | forward | input gradient | parameter gradient |\n"
              "| --- | --- | --- | --- | --- |\n",
              omp_get_max_threads(), calls);
  std::mt19937 random(1);
  std::normal_distribution<float> normal;
  const BatchNormShape shapes[] = {{.batch = 32, .channels = 16, .spatial = 32 * 32, .eps = 1e-5f},
                                   {.batch = 32, .channels = 32, .spatial = 16 * 16, .eps = 1e-5f},
                                   {.batch = 32, .channels = 64, .spatial = 8 * 8, .eps = 1e-5f}};
  for (const BatchNormShape& s : shapes) {
    const auto size = static_cast<std::size_t>(s.batch * s.channels * s.spatial);
    std::vector<float> x(size), dy(size), y(size), dx(size), stats(2 * s.channels), gamma(s.channels, 1.5f),
        beta(s.channels, 0.5f), dgamma(s.channels), dbeta(s.channels);
    for (auto* values : {&x, &dy})
      for (float& v : *values) v = normal(random);
    const double statistics = best_ms(calls, [&] { batch_norm_stats(s, x, stats); });
    const double forward = best_ms(calls, [&] { batch_norm_forward(s, x, stats, gamma, beta, y); });
    const double input = best_ms(calls, [&] { batch_norm_backward_input(s, dy, x, stats, gamma, dx); });
    const double params = best_ms(calls, [&] { batch_norm_backward_params(s, dy, x, stats, dgamma, dbeta); });
    std::printf("| %lld x %lld x %lld | %.3f ms | %.3f ms | %.3f ms | %.3f ms |\n", static_cast<long long>(s.batch),
                static_cast<long long>(s.channels), static_cast<long long>(s.spatial), statistics, forward, input,
                params);
  }
}
