// Parameter updates: memory-bound loops (momentum reads three arrays of every trained
// parameter and writes two: 234 MB a step for resnet18), so the elements are shared between
// the threads in blocks, and -O3 makes each block SIMD.
#include "poet/kernels/kernels_optimizer.h"

#include <cmath>
#include <cstdint>

#include "kernel_checks.h"
#include "parallel_for.h"

namespace poet::kernels {

void sgd_update(float learning_rate, std::span<const float> g, std::span<float> p) {
  detail::expect_size("sgd_update", "parameters", p, static_cast<std::int64_t>(g.size()));
  detail::parallel_blocks(static_cast<std::int64_t>(g.size()), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) p[i] -= learning_rate * g[i];
  });
}

void momentum_update(float learning_rate, float momentum, std::span<const float> g, std::span<float> v,
                     std::span<float> p) {
  detail::expect_size("momentum_update", "velocity", v, static_cast<std::int64_t>(g.size()));
  detail::expect_size("momentum_update", "parameters", p, static_cast<std::int64_t>(g.size()));
  detail::parallel_blocks(static_cast<std::int64_t>(g.size()), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      v[i] = momentum * v[i] + g[i];
      p[i] -= learning_rate * v[i];
    }
  });
}

void adam_update(const AdamStep& a, std::span<const float> g, std::span<float> m, std::span<float> v,
                 std::span<float> p) {
  const auto n = static_cast<std::int64_t>(g.size());
  detail::expect_size("adam_update", "first moment", m, n);
  detail::expect_size("adam_update", "second moment", v, n);
  detail::expect_size("adam_update", "parameters", p, n);
  detail::parallel_blocks(n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      m[i] = a.beta1 * m[i] + (1.0f - a.beta1) * g[i];
      v[i] = a.beta2 * v[i] + (1.0f - a.beta2) * g[i] * g[i];
      const float m_hat = m[i] / a.correction1, v_hat = v[i] / a.correction2;
      p[i] -= a.learning_rate * m_hat / (std::sqrt(v_hat) + a.epsilon);
    }
  });
}

}  // namespace poet::kernels
