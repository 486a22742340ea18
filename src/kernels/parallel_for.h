// Runs f(i) for i in [0, count) on OpenMP's threads (OMP_NUM_THREADS, as the GEMM) when
// there is enough work to share, else on the calling thread. Each i is one independent
// piece of output (a channel, a block of elements), computed the same way whichever thread
// takes it: results are bit-identical for every thread count.
#pragma once

#include <cstdint>

namespace poet::kernels::detail {

// Below about this many elements of work, starting the threads costs more than it saves.
// Measured at 2 threads (docs/BENCHMARKS.md, "Kernel speed"): with 32,768 a resnet18_cifar
// step (batch 32) took 125 ms, with 262,144 96 ms; mobilenet_v2's (batch 4) 131 and 135 ms.
inline constexpr std::int64_t kParallelMinElements = 262144;

template <typename F>
void parallel_for(std::int64_t count, std::int64_t elements_each, F f) {
#pragma omp parallel for schedule(static) if (count > 1 && count * elements_each >= kParallelMinElements)
  for (std::int64_t i = 0; i < count; ++i) f(i);
}

// f(begin, end) over [0, size) in blocks of kBlock items, shared between the threads; each
// item is `elements_per_item` elements of work (a mask byte stands for 8 tensor elements).
template <typename F>
void parallel_blocks(std::int64_t size, F f, std::int64_t elements_per_item = 1) {
  constexpr std::int64_t kBlock = 16384;
  parallel_for((size + kBlock - 1) / kBlock, kBlock * elements_per_item, [&](std::int64_t b) {
    const std::int64_t begin = b * kBlock;
    f(begin, begin + kBlock < size ? begin + kBlock : size);
  });
}

}  // namespace poet::kernels::detail
