// The update applied after each step's backward: SGD, SGD with momentum, Adam. Each
// works element by element on the trained parts of the parameter slices
// (kernels_optimizer.h), with no sums across elements, so two executors holding
// bit-identical gradients make bit-identical updates at any thread count.
#pragma once

#include <cstdint>

#include "poet/graph/graph.h"
#include "poet/runtime/parameters.h"

namespace poet::runtime {

struct OptimizerConfig {
  Optimizer kind = Optimizer::Momentum;
  float learning_rate = 0.01f;
  float momentum = 0.9f;  // Momentum: v = momentum v + g; p -= lr v (PyTorch's form)
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;  // Adam (Kingma & Ba 2015)
};

// Floats of state per parameter the optimizer keeps.
int optimizer_state_per_parameter(Optimizer kind);

// Throws InputError naming the field if a rate or coefficient is out of range.
void validate(const OptimizerConfig& config);

// Applies one update. `step` counts from 1 (Adam's bias correction uses it).
void apply_optimizer(const OptimizerConfig& config, std::uint64_t step, ParameterStore& store);

}  // namespace poet::runtime
