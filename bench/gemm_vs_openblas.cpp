// The GEMM poet's convolutions and linear layers run, through OpenBLAS and through oneDNN's
// sgemm, on the shapes of resnet18's and resnet18_cifar's layers (one thread each). This is
// the measurement behind poet's choice of oneDNN (docs/BENCHMARKS.md, "Kernel speed"); it
// is not built with poet, since poet no longer links OpenBLAS. To run it:
//   apt-get install libopenblas-dev libdnnl-dev
//   g++ -O2 -std=c++20 bench/gemm_vs_openblas.cpp -o /tmp/gemm_vs_openblas -lopenblas -ldnnl
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /tmp/gemm_vs_openblas
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <chrono>
#include <cstdio>
#include <vector>
int main() {
  // m, n, k and the transpositions: forward (W x cols), input gradient (W^T dY), weight gradient (dY cols^T).
  struct S { int m, n, k; bool ta, tb; } shapes[] = {{64, 3136, 576, false, false}, {128, 784, 1152, false, false}, {512, 49, 4608, false, false}, {576, 3136, 64, true, false}, {64, 576, 3136, false, true}, {16, 1024, 144, false, false}};
  for (auto s : shapes) {
    std::vector<float> a(s.m * s.k, 0.5f), b(s.k * s.n, 0.25f), c(s.m * s.n);
    int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    double best[2] = {1e9, 1e9};
    for (int rep = 0; rep < 20; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.f, a.data(), lda, b.data(), ldb, 0.f, c.data(), s.n);
      auto t1 = std::chrono::steady_clock::now();
      dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.f, a.data(), lda, b.data(), ldb, 0.f, c.data(), s.n);
      auto t2 = std::chrono::steady_clock::now();
      best[0] = std::min(best[0], std::chrono::duration<double>(t1 - t0).count());
      best[1] = std::min(best[1], std::chrono::duration<double>(t2 - t1).count());
    }
    double gf = 2.0 * s.m * s.n * s.k / 1e9;
    std::printf("%4d %5d %5d %d%d  openblas %.1f GFLOP/s  dnnl %.1f GFLOP/s  ratio %.2f\n", s.m, s.n, s.k, s.ta, s.tb, gf / best[0], gf / best[1], best[0] / best[1]);
  }
}
