#include "gemm.h"

#include <cblas.h>
#include <fmt/format.h>

#include <limits>

#include "poet/util/error.h"

namespace poet::kernels::detail {
namespace {

int as_blas_int(std::int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw InputError(fmt::format("GEMM dimension {} = {} does not fit the BLAS's 32-bit integers", what, v));
  return static_cast<int>(v);
}

}  // namespace

void gemm(bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
              as_blas_int(m, "m"), as_blas_int(n, "n"), as_blas_int(k, "k"), alpha, a, as_blas_int(lda, "lda"), b,
              as_blas_int(ldb, "ldb"), beta, c, as_blas_int(ldc, "ldc"));
}

}  // namespace poet::kernels::detail
