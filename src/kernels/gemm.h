// Row-major single-precision GEMM (oneDNN's sgemm): C = alpha op(A) op(B) + beta C,
// op(A) [m, k], op(B) [k, n]. Its threads are OpenMP's (OMP_NUM_THREADS).
#pragma once

#include <cstdint>

namespace poet::kernels::detail {

void gemm(bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc);

}  // namespace poet::kernels::detail
