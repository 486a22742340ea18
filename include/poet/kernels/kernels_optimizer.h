// The parameter updates applied after a step's backward, on one contiguous run of
// parameters with their gradients and optimizer state. Element by element with no
// reassociation, so the result does not depend on the thread count or on how the
// parameters are cut into runs.
#pragma once

#include <span>

namespace poet::kernels {

// p -= learning_rate g.
void sgd_update(float learning_rate, std::span<const float> g, std::span<float> p);

// v = momentum v + g; p -= learning_rate v (PyTorch's form).
void momentum_update(float learning_rate, float momentum, std::span<const float> g, std::span<float> v,
                     std::span<float> p);

// Adam (Kingma & Ba 2015). correction1 and correction2 are 1 - beta^step, computed once
// per step by the caller.
struct AdamStep {
  float learning_rate, beta1, beta2, epsilon, correction1, correction2;
};
void adam_update(const AdamStep& a, std::span<const float> g, std::span<float> m, std::span<float> v,
                 std::span<float> p);

}  // namespace poet::kernels
