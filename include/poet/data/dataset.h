// A labelled image dataset in memory, ready to batch: float pixels (NCHW per sample) and
// one class per sample, split into the training and the test set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace poet::data {

struct Dataset {
  std::vector<std::int64_t> sample_shape;  // C, H, W (or features) of one sample
  std::vector<float> inputs;               // count() samples of sample_elements() each
  std::vector<std::int32_t> labels;
  int classes = 0;

  std::int64_t count() const { return static_cast<std::int64_t>(labels.size()); }
  std::int64_t sample_elements() const;
};

struct DatasetSplits {
  std::string name;
  Dataset train, test;
};

}  // namespace poet::data
