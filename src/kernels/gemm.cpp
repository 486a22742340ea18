#include "gemm.h"

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include "poet/util/error.h"

namespace poet::kernels::detail {

void gemm(bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  const bool small = gemm_runs_on_one_thread(m, n, k);
  const int threads = omp_get_max_threads();
  if (small && threads > 1) omp_set_num_threads(1);
  const dnnl_status_t status =
      dnnl_sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (small && threads > 1) omp_set_num_threads(threads);
  POET_CHECK(status == dnnl_success, fmt::format("oneDNN's sgemm refused [{} x {}] x [{} x {}] (status {})", m, k, k,
                                                 n, static_cast<int>(status)));
}

}  // namespace poet::kernels::detail
