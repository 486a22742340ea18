#include "poet/data/dataset.h"

#include <algorithm>

#include "poet/util/error.h"

namespace poet::data {

std::int64_t Dataset::sample_elements() const {
  std::int64_t n = 1;
  for (const std::int64_t d : sample_shape) n *= d;
  return n;
}

void Dataset::read_sample(std::int64_t index, std::span<float> values) const {
  const std::int64_t n = sample_elements();
  POET_CHECK(index >= 0 && index < count() && static_cast<std::int64_t>(values.size()) == n,
             "a sample is read by its index into room for its values");
  if (reader) return reader->read(index, values);
  std::copy_n(inputs.begin() + index * n, n, values.begin());
}

}  // namespace poet::data
