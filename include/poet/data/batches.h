// Batching: each epoch visits the samples in an order shuffled by (seed, epoch) alone, so
// epoch k's batches are the same whether training ran straight through or resumed from a
// checkpoint. Only whole batches are made (the training graph has a fixed batch size); the
// remainder of an epoch is left out, a different part each epoch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "poet/data/dataset.h"

namespace poet::data {

// A permutation of 0 .. count-1 (Fisher-Yates over the counter-based RNG).
std::vector<std::int64_t> shuffled_order(std::int64_t count, std::uint64_t seed, std::uint64_t epoch);

// Whole batches of `batch_size` in `count` samples.
std::int64_t batch_count(std::int64_t count, std::int64_t batch_size);

// Copies batch `index` of `order` (batch_size samples) into `inputs` and `labels`, which
// must hold batch_size samples. Throws InputError if they do not or if the batch runs past
// the order.
void fill_batch(const Dataset& d, std::span<const std::int64_t> order, std::int64_t index, std::int64_t batch_size,
                std::span<float> inputs, std::span<std::int32_t> labels);

}  // namespace poet::data
