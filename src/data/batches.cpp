#include "poet/data/batches.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "poet/kernels/rng.h"
#include "poet/util/error.h"

namespace poet::data {

std::vector<std::int64_t> shuffled_order(std::int64_t count, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  std::iota(order.begin(), order.end(), 0);
  const kernels::RandomKey key{seed, epoch, 0x5A0F};
  for (std::size_t i = order.size(); i > 1; --i) {
    // 64 random bits make the modulo's bias negligible for any dataset that fits in RAM.
    const std::uint64_t r =
        (std::uint64_t{kernels::random_bits(key, 2 * i)} << 32) | kernels::random_bits(key, 2 * i + 1);
    std::swap(order[i - 1], order[r % i]);
  }
  return order;
}

std::int64_t batch_count(std::int64_t count, std::int64_t batch_size) {
  return batch_size > 0 ? count / batch_size : 0;
}

void fill_batch(const Dataset& d, std::span<const std::int64_t> order, std::int64_t index, std::int64_t batch_size,
                std::span<float> inputs, std::span<std::int32_t> labels) {
  const std::int64_t n = d.sample_elements();
  if (static_cast<std::int64_t>(inputs.size()) != batch_size * n ||
      static_cast<std::int64_t>(labels.size()) != batch_size)
    throw InputError(fmt::format("a batch of {} samples of {} values needs room for {} inputs and {} labels",
                                 batch_size, n, batch_size * n, batch_size));
  if (index < 0 || (index + 1) * batch_size > static_cast<std::int64_t>(order.size()))
    throw InputError(fmt::format("batch {} of {} samples runs past the {} samples", index, batch_size, order.size()));
  for (std::int64_t r = 0; r < batch_size; ++r) {
    const std::int64_t s = order[static_cast<std::size_t>(index * batch_size + r)];
    d.read_sample(s, inputs.subspan(static_cast<std::size_t>(r * n), static_cast<std::size_t>(n)));
    labels[static_cast<std::size_t>(r)] = d.labels[static_cast<std::size_t>(s)];
  }
}

}  // namespace poet::data
