#include "poet/data/dataset.h"

#include <fmt/format.h>

#include <algorithm>

#include "poet/util/error.h"
#include "poet/util/units.h"

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

std::string identity(const DatasetSplits& d) {
  const std::string kind = d.name.substr(0, d.name.find(':'));
  return fmt::format("{}, {} classes{}, {} training samples", kind, d.train.classes,
                     d.class_names.empty() ? "" : " (" + d.class_names + ")",
                     format_grouped(static_cast<double>(d.train.count())));
}

}  // namespace poet::data
