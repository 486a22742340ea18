// The loss: softmax over the last axis and cross-entropy against integer labels, averaged
// over the rows (the batch, or batch x positions for a per-token head).
#pragma once

#include <cstdint>
#include <span>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels {

// Writes the class probabilities (the loss node's output) and returns the mean loss. A
// label outside [0, cols) is bad data: InputError.
float softmax_cross_entropy_forward(const RowsShape& s, std::span<const float> logits,
                                    std::span<const std::int32_t> labels, std::span<float> probabilities);
// dlogits = (probabilities - one_hot(labels)) / rows: reads the output, there is no dY.
void softmax_cross_entropy_backward(const RowsShape& s, std::span<const float> probabilities,
                                    std::span<const std::int32_t> labels, std::span<float> dlogits);

// The mean squared error of x against target over all `count` values: writes the
// difference x - target (the loss node's output) and returns the mean of its squares.
float mean_squared_error_forward(std::span<const float> x, std::span<const float> target, std::span<float> difference);
// dx = 2 difference / count: reads the output, there is no dY.
void mean_squared_error_backward(std::span<const float> difference, std::span<float> dx);

}  // namespace poet::kernels
