// Inverted dropout: kept elements are scaled by 1 / (1 - p), so evaluation is the
// identity. The mask comes from the counter-based RNG (rng.h), keyed by (seed, step,
// node, element index): the backward and any recomputation regenerate it bit for bit.
#pragma once

#include <span>

#include "poet/kernels/rng.h"

namespace poet::kernels {

// 0 <= p <= 1, else InputError. p == 1 drops everything.
void dropout_forward(const RandomKey& key, float p, std::span<const float> x, std::span<float> y);
void dropout_backward(const RandomKey& key, float p, std::span<const float> dy, std::span<float> dx);

}  // namespace poet::kernels
