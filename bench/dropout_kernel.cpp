// Dropout's mask: poet's dropout_forward (Philox eight blocks at a time, in AVX2 lanes
// where the CPU has them) against the same mask drawn one block at a time, on a tensor of
// the transformer's feed-forward size, each the best of N calls in one run, at
// OMP_NUM_THREADS threads (docs/BENCHMARKS.md). Usage:
//   OMP_NUM_THREADS=1 build/bench/poet_bench_dropout [calls, default 20]
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "conv_layers.h"
#include "poet/kernels/kernels_dropout.h"
#include "poet/kernels/rng.h"

int main(int argc, char** argv) {
  using namespace poet;
  const int calls = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  const std::size_t n = std::size_t{4} << 20;  // 4 Mi floats: batch 32 x 128 tokens x 1024
  const std::vector<float> x(n, 1.0f);
  std::vector<float> y(n);
  const kernels::RandomKey key{.seed = 1, .step = 2, .node = 3};
  const float p = 0.1f, scale = 1.0f / (1.0f - p);
  const auto threshold = static_cast<std::uint32_t>(0.1 * (1u << 24) + 0.5);
  const double one_block = bench::best_ms(calls, [&] {
    for (std::size_t base = 0; base < n; base += 4) {
      const auto words = kernels::random_block(key, static_cast<std::uint32_t>(base / 4));
      for (std::size_t lane = 0; lane < 4; ++lane)
        y[base + lane] = (words[lane] >> 8) >= threshold ? x[base + lane] * scale : 0.0f;
    }
  });
  const double poet = bench::best_ms(calls, [&] { kernels::dropout_forward(key, p, x, y); });
  std::printf("%d threads, best of %d calls, %zu floats\n| one block at a time | dropout_forward | ratio |\n"
              "| --- | --- | --- |\n| %.2f ms | %.2f ms | %.2fx |\n",
              omp_get_max_threads(), calls, n, one_block, poet, poet / one_block);
}
