#include "poet/data/dataset.h"

namespace poet::data {

std::int64_t Dataset::sample_elements() const {
  std::int64_t n = 1;
  for (const std::int64_t d : sample_shape) n *= d;
  return n;
}

}  // namespace poet::data
