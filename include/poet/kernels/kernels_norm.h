// Batch norm (training mode), layer norm and group norm, each split as the `autodiff` graph
// splits it: a statistics kernel (the BatchNormStats, LayerNormStats or GroupNormStats
// node, [groups, 2] holding mean and inverse standard deviation per group, interleaved) and
// the normalization, whose backward reads x and those statistics instead of the norm's
// output.
//
// The input gradients differentiate through the statistics too (no gradient flows into
// the statistics node). Variances are the biased ones, as training-mode normalization uses.
#pragma once

#include <span>

#include "poet/kernels/kernel_shapes.h"

namespace poet::kernels {

// stats[c] = (mean, 1 / sqrt(var + eps)) of channel c over batch and positions.
void batch_norm_stats(const BatchNormShape& s, std::span<const float> x, std::span<float> stats);
// y = gamma (x - mean) inv_std + beta, per channel.
void batch_norm_forward(const BatchNormShape& s, std::span<const float> x, std::span<const float> stats,
                        std::span<const float> gamma, std::span<const float> beta, std::span<float> y);
void batch_norm_backward_input(const BatchNormShape& s, std::span<const float> dy, std::span<const float> x,
                               std::span<const float> stats, std::span<const float> gamma, std::span<float> dx);
void batch_norm_backward_params(const BatchNormShape& s, std::span<const float> dy, std::span<const float> x,
                                std::span<const float> stats, std::span<float> dgamma, std::span<float> dbeta);
// running = (1 - momentum) running + momentum batch, with the batch variance unbiased
// (x n / (n - 1)) as PyTorch does. Separate from batch_norm_stats on purpose: a
// recomputed statistics node must not update the running statistics a second time, so the
// executor calls this once per step.
void batch_norm_update_running_stats(const BatchNormShape& s, std::span<const float> stats, float momentum,
                                     std::span<float> running_mean, std::span<float> running_var);
// Statistics for evaluation: (running mean, 1 / sqrt(running var + eps)), for
// batch_norm_forward.
void batch_norm_inference_stats(const BatchNormShape& s, std::span<const float> running_mean,
                                std::span<const float> running_var, std::span<float> stats);

// stats[r] = (mean, 1 / sqrt(var + eps)) of row r.
void layer_norm_stats(const LayerNormShape& s, std::span<const float> x, std::span<float> stats);
// y = gamma (x - mean) inv_std + beta, gamma and beta per feature.
void layer_norm_forward(const LayerNormShape& s, std::span<const float> x, std::span<const float> stats,
                        std::span<const float> gamma, std::span<const float> beta, std::span<float> y);
void layer_norm_backward_input(const LayerNormShape& s, std::span<const float> dy, std::span<const float> x,
                               std::span<const float> stats, std::span<const float> gamma, std::span<float> dx);
void layer_norm_backward_params(const LayerNormShape& s, std::span<const float> dy, std::span<const float> x,
                                std::span<const float> stats, std::span<float> dgamma, std::span<float> dbeta);

// stats[n groups + g] = (mean, 1 / sqrt(var + eps)) of group g of sample n: layer norm's
// statistics over rows of group_elements().
void group_norm_stats(const GroupNormShape& s, std::span<const float> x, std::span<float> stats);
// y = gamma (x - mean) inv_std + beta, the statistics per group, gamma and beta per channel.
void group_norm_forward(const GroupNormShape& s, std::span<const float> x, std::span<const float> stats,
                        std::span<const float> gamma, std::span<const float> beta, std::span<float> y);
void group_norm_backward_input(const GroupNormShape& s, std::span<const float> dy, std::span<const float> x,
                               std::span<const float> stats, std::span<const float> gamma, std::span<float> dx);
void group_norm_backward_params(const GroupNormShape& s, std::span<const float> dy, std::span<const float> x,
                                std::span<const float> stats, std::span<float> dgamma, std::span<float> dbeta);

}  // namespace poet::kernels
