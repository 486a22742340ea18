#include "poet/runtime/optimizer.h"

#include <fmt/format.h>

#include <cmath>

#include "poet/util/error.h"

namespace poet::runtime {

int optimizer_state_per_parameter(Optimizer kind) {
  switch (kind) {
    case Optimizer::SGD:
      return 0;
    case Optimizer::Momentum:
      return 1;
    case Optimizer::Adam:
      return 2;
  }
  return 0;
}

void validate(const OptimizerConfig& c) {
  auto require = [](bool ok, const char* field, float value, const char* range) {
    if (!ok) throw InputError(fmt::format("optimizer {} = {} is out of range: it must be {}", field, value, range));
  };
  require(std::isfinite(c.learning_rate) && c.learning_rate > 0, "learning rate", c.learning_rate, "> 0");
  require(c.momentum >= 0 && c.momentum < 1, "momentum", c.momentum, "in [0, 1)");
  require(c.beta1 >= 0 && c.beta1 < 1, "beta1", c.beta1, "in [0, 1)");
  require(c.beta2 >= 0 && c.beta2 < 1, "beta2", c.beta2, "in [0, 1)");
  require(c.epsilon > 0, "epsilon", c.epsilon, "> 0");
}

void apply_optimizer(const OptimizerConfig& c, std::uint64_t step, ParameterStore& store) {
  POET_CHECK(store.state_per_parameter() == optimizer_state_per_parameter(c.kind),
             "optimizer state sized for another optimizer");
  float* p = store.all_values().data();
  const float* g = store.all_gradients().data();
  float* state = store.optimizer_state().data();
  const std::int64_t trained = static_cast<std::int64_t>(store.all_gradients().size());
  // Adam's bias corrections, once per step.
  const float correction1 = 1.0f - std::pow(c.beta1, static_cast<float>(step));
  const float correction2 = 1.0f - std::pow(c.beta2, static_cast<float>(step));
  for (const ParameterSlice& s : store.slices()) {
    for (std::int64_t k = 0; k < s.trainable; ++k) {
      const std::int64_t i = s.offset + k, j = s.trained_offset + k;  // parameter; its gradient and state
      switch (c.kind) {
        case Optimizer::SGD:
          p[i] -= c.learning_rate * g[j];
          break;
        case Optimizer::Momentum: {
          float& v = state[j];
          v = c.momentum * v + g[j];
          p[i] -= c.learning_rate * v;
          break;
        }
        case Optimizer::Adam: {
          float& m = state[j];
          float& v = state[trained + j];
          m = c.beta1 * m + (1.0f - c.beta1) * g[j];
          v = c.beta2 * v + (1.0f - c.beta2) * g[j] * g[j];
          const float m_hat = m / correction1, v_hat = v / correction2;
          p[i] -= c.learning_rate * m_hat / (std::sqrt(v_hat) + c.epsilon);
          break;
        }
      }
    }
  }
}

}  // namespace poet::runtime
