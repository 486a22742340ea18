#include "poet/data/synthetic_dataset.h"

#include <fmt/format.h>

#include <bit>
#include <limits>

#include "poet/kernels/rng.h"
#include "poet/util/error.h"

namespace poet::data {
namespace {

// Uniform in [-1, 1) from 24 random bits.
float uniform(const kernels::RandomKey& key, std::uint64_t index) {
  return static_cast<float>(kernels::random_bits(key, index) >> 8) / 8388608.0f - 1.0f;
}

// Separate streams for prototypes, the training set and the test set.
constexpr std::uint32_t kPrototypes = 0x5E01, kTrain = 0x5E02, kTest = 0x5E03;

// Element i of class `label`'s prototype: computed where it is used, not stored, since
// the prototypes of a 1000-class 224x224 model would take 600 MB.
float prototype(const SyntheticOptions& o, std::int64_t label, std::int64_t sample_elements, std::int64_t i) {
  return uniform({o.seed, 0, kPrototypes}, static_cast<std::uint64_t>(label * sample_elements + i));
}

// Element i of a sample of class `label` whose own random bits are `bits`: its
// prototype's value plus noise, or a token id.
float sample_value(const SyntheticOptions& o, std::int64_t label, std::int64_t sample_elements, std::int64_t i,
                   const kernels::RandomKey& key, std::uint64_t bits) {
  if (o.vocabulary == 0) return prototype(o, label, sample_elements, i) + o.noise * uniform(key, bits);
  const auto vocab = static_cast<std::uint32_t>(o.vocabulary);
  const std::uint32_t own =
      kernels::random_bits({o.seed, 0, kPrototypes}, static_cast<std::uint64_t>(label * sample_elements + i)) % vocab;
  // One draw decides against the prototype (with probability noise / 2), another, of the
  // next step's stream, picks the id that replaces it.
  const bool replaced = static_cast<float>(kernels::random_bits(key, bits) >> 8) < o.noise * 0.5f * 16777216.0f;
  const std::uint32_t other = kernels::random_bits({key.seed, key.step + 1, key.node}, bits) % vocab;
  return std::bit_cast<float>(static_cast<std::int32_t>(replaced ? other : own));
}

Dataset make_split(const SyntheticOptions& o, std::int64_t count, std::uint32_t stream) {
  Dataset d;
  d.sample_shape = o.sample_shape;
  d.classes = o.classes;
  d.vocabulary = o.vocabulary;
  const std::int64_t n = d.sample_elements();
  const kernels::RandomKey key{o.seed, 0, stream};
  d.inputs.resize(static_cast<std::size_t>(count * n));
  for (std::int64_t s = 0; s < count; ++s) {
    const auto label = static_cast<std::int32_t>(kernels::random_bits(key, static_cast<std::uint64_t>(s)) %
                                                 static_cast<std::uint32_t>(o.classes));
    d.labels.push_back(label);
    // Element indices past the labels' so the two never share random bits.
    const std::uint64_t base = static_cast<std::uint64_t>(count) + static_cast<std::uint64_t>(s * n);
    for (std::int64_t i = 0; i < n; ++i)
      d.inputs[static_cast<std::size_t>(s * n + i)] =
          sample_value(o, label, n, i, key, base + static_cast<std::uint64_t>(i));
  }
  return d;
}

}  // namespace

DatasetSplits make_synthetic_dataset(const SyntheticOptions& o) {
  if (o.sample_shape.empty())
    throw InputError("synthetic dataset: the sample shape is empty; give the model's input shape without the batch");
  for (const std::int64_t d : o.sample_shape)
    if (d <= 0) throw InputError(fmt::format("synthetic dataset: sample dimension {} is not positive", d));
  if (o.classes < 2) throw InputError(fmt::format("synthetic dataset: {} classes; need at least 2", o.classes));
  if (o.vocabulary < 0 || o.vocabulary > std::numeric_limits<std::int32_t>::max())
    throw InputError(fmt::format("synthetic dataset: a vocabulary of {} tokens is not one of int32 ids", o.vocabulary));
  if (o.train_count < 1 || o.test_count < 1)
    throw InputError("synthetic dataset: the training and test sets need at least one sample each");
  return {"synthetic", make_split(o, o.train_count, kTrain), make_split(o, o.test_count, kTest), {}};
}

}  // namespace poet::data
