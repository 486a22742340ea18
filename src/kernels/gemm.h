// Row-major single-precision GEMM (oneDNN's sgemm): C = alpha op(A) op(B) + beta C,
// op(A) [m, k], op(B) [k, n]. Its threads are OpenMP's (OMP_NUM_THREADS).
#pragma once

#include <cstdint>

namespace poet::kernels::detail {

// A product m x n x k below this runs on the calling thread: oneDNN shares every product
// among all OMP_NUM_THREADS threads, and for lenet5's (a few MFLOP) starting them costs more
// than the product (at 2 threads a lenet5 step took 3.27 ms, with this 1.81 ms).
inline constexpr std::int64_t kGemmSmallProduct = 10'000'000;

inline bool gemm_runs_on_one_thread(std::int64_t m, std::int64_t n, std::int64_t k) {
  return m * n * k < kGemmSmallProduct;
}

void gemm(bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc);

}  // namespace poet::kernels::detail
