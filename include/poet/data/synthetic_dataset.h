// A dataset made up from a seed, for tests and for models whose real data poet does not
// ship: each class has its own random prototype and every sample is its class's prototype
// plus noise, so it is learnable (a network separates the classes in a few hundred steps)
// yet not trivial, and the same seed gives the same bits on every machine.
#pragma once

#include <cstdint>
#include <vector>

#include "poet/data/dataset.h"

namespace poet::data {

struct SyntheticOptions {
  std::vector<std::int64_t> sample_shape;  // of one sample, e.g. {1, 28, 28}
  int classes = 10;
  std::int64_t train_count = 1024;
  std::int64_t test_count = 256;
  std::uint64_t seed = 0;
  float noise = 0.5f;  // noise amplitude beside prototypes of amplitude 1
  // > 0: samples are sequences of token ids below it (Dataset::vocabulary): each class's
  // prototype is a sequence of ids, and each token of a sample is its prototype's with
  // probability 1 - noise / 2, otherwise a random id.
  std::int64_t vocabulary = 0;
};

// Throws InputError for an empty shape, fewer than 2 classes or no samples.
DatasetSplits make_synthetic_dataset(const SyntheticOptions& options);

}  // namespace poet::data
