// The parameter update after a step, on resnet18's parameters (11.7 M trained floats): poet's
// apply_optimizer against the same formula one element at a time in a plain loop, each the
// best of N calls in one run, at OMP_NUM_THREADS threads (docs/BENCHMARKS.md, "Kernel
// speed"). Usage:
//   OMP_NUM_THREADS=1 build/bench/poet_bench_optimizer [calls, default 20]
#include <omp.h>

#include <cstdio>
#include <cmath>
#include <cstdlib>

#include "conv_layers.h"
#include "poet/backward/backward.h"
#include "poet/runtime/optimizer.h"

int main(int argc, char** argv) {
  using namespace poet;
  const int calls = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  const Graph g = build_model_training_graph("resnet18", {.batch_size = 1}, BackwardMode::Autodiff);
  std::printf("%d threads, best of %d calls\n| optimizer | plain loop | apply_optimizer | ratio |\n| --- | --- | --- | --- |\n",
              omp_get_max_threads(), calls);
  for (const Optimizer kind : {Optimizer::SGD, Optimizer::Momentum, Optimizer::Adam}) {
    runtime::OptimizerConfig c;
    c.kind = kind;
    runtime::ParameterStore store(g, runtime::optimizer_state_per_parameter(kind), 1);
    for (float& x : store.all_gradients()) x = 1e-3f;
    float* p = store.all_values().data();
    const float* gradient = store.all_gradients().data();
    float* state = store.optimizer_state().data();
    const auto trained = static_cast<std::int64_t>(store.all_gradients().size());
    // The update as one loop over the elements with the optimizer chosen inside (Adam at its
    // first step, as apply_optimizer below).
    const double plain = bench::best_ms(calls, [&] {
      for (const runtime::ParameterSlice& s : store.slices())
        for (std::int64_t k = 0; k < s.trainable; ++k) {
          const std::int64_t i = s.offset + k, j = s.trained_offset + k;
          if (kind == Optimizer::SGD) {
            p[i] -= c.learning_rate * gradient[j];
          } else if (kind == Optimizer::Momentum) {
            state[j] = c.momentum * state[j] + gradient[j];
            p[i] -= c.learning_rate * state[j];
          } else {
            float& m = state[j];
            float& v = state[trained + j];
            m = c.beta1 * m + (1.0f - c.beta1) * gradient[j];
            v = c.beta2 * v + (1.0f - c.beta2) * gradient[j] * gradient[j];
            p[i] -= c.learning_rate * (m / (1.0f - c.beta1)) / (std::sqrt(v / (1.0f - c.beta2)) + c.epsilon);
          }
        }
    });
    const double poet = bench::best_ms(calls, [&] { runtime::apply_optimizer(c, 1, store); });
    const char* name = kind == Optimizer::SGD ? "SGD" : kind == Optimizer::Momentum ? "momentum" : "Adam";
    std::printf("| %s | %.2f ms | %.2f ms | %.2fx |\n", name, plain, poet, poet / plain);
  }
}
