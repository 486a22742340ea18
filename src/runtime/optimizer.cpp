#include "poet/runtime/optimizer.h"

#include <fmt/format.h>

#include <cmath>

#include "poet/kernels/kernels_optimizer.h"
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
  const std::span<float> values = store.all_values();
  const std::span<const float> gradients = store.all_gradients();
  const std::span<float> state = store.optimizer_state();
  const std::size_t trained = gradients.size();
  // Adam's bias corrections, once per step.
  const kernels::AdamStep adam{.learning_rate = c.learning_rate,
                               .beta1 = c.beta1,
                               .beta2 = c.beta2,
                               .epsilon = c.epsilon,
                               .correction1 = 1.0f - std::pow(c.beta1, static_cast<float>(step)),
                               .correction2 = 1.0f - std::pow(c.beta2, static_cast<float>(step))};
  for (const ParameterSlice& s : store.slices()) {
    const auto n = static_cast<std::size_t>(s.trainable), j = static_cast<std::size_t>(s.trained_offset);
    const auto g = gradients.subspan(j, n);
    const auto p = values.subspan(static_cast<std::size_t>(s.offset), n);
    switch (c.kind) {
      case Optimizer::SGD:
        kernels::sgd_update(c.learning_rate, g, p);
        break;
      case Optimizer::Momentum:
        kernels::momentum_update(c.learning_rate, c.momentum, g, state.subspan(j, n), p);
        break;
      case Optimizer::Adam:
        kernels::adam_update(adam, g, state.subspan(j, n), state.subspan(trained + j, n), p);
        break;
    }
  }
}

}  // namespace poet::runtime
