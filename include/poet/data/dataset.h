// A labelled dataset, ready to batch: one class per sample and each sample's float values
// (NCHW per sample, or a sequence's token ids), split into the training and the test set. The values are held in
// memory (Fashion-MNIST, synthetic data), or decoded when a batch needs them by a
// SampleReader (an image folder, too large to hold decoded).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace poet::data {

// Makes sample `index`'s values on demand. Throws InputError (naming the file) when the
// sample's source turns out to be unreadable.
class SampleReader {
 public:
  virtual ~SampleReader() = default;
  virtual void read(std::int64_t index, std::span<float> values) const = 0;
};

struct Dataset {
  std::vector<std::int64_t> sample_shape;  // C, H, W (or features) of one sample
  std::vector<float> inputs;               // count() samples of sample_elements() each, unless `reader`
  std::vector<std::int32_t> labels;
  int classes = 0;
  // > 0: each value is a token id below it, held as the bits of an int32 (what an
  // embedding of the model's input reads: graph/op_table.h's token_vocabulary); 0: numbers.
  std::int64_t vocabulary = 0;
  std::shared_ptr<const SampleReader> reader;  // when set, the samples' values come from it; `inputs` is empty

  std::int64_t count() const { return static_cast<std::int64_t>(labels.size()); }
  std::int64_t sample_elements() const;
  // Writes sample `index`'s sample_elements() values into `values`.
  void read_sample(std::int64_t index, std::span<float> values) const;
};

struct DatasetSplits {
  std::string name;
  Dataset train, test;
  std::string class_names;  // an image folder's, in label order ("'disc', 'stripes'"); empty: numbered
};

// What a run resumed from a checkpoint must train on again for its batches to be the ones
// the checkpoint's run would have drawn: the kind of data, its classes (named ones too: a
// class folder added shifts every label) and the number of training samples. Not the
// folder's path: a moved folder is the same data.
std::string identity(const DatasetSplits& d);

}  // namespace poet::data
