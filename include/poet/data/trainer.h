// The training loop around one Executor: epochs over a dataset in shuffled whole batches,
// evaluation, and checkpoints that resume bit-identically.
//
// The executor only knows training steps, so evaluation runs one on each test batch and
// then puts parameters and optimizer state back as they were: the predictions are the
// forward pass's (in training mode: batch norm uses the batch's statistics, dropout is
// on), and the model is unchanged. Such a step still advances the executor's step
// counter, which a fresh executor cannot be told; restore() brings it level the same way,
// with steps whose effect is undone, so a resumed run sees the step numbers (Adam's bias
// correction, dropout masks) of an uninterrupted one.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "poet/data/checkpoint_file.h"
#include "poet/data/dataset.h"
#include "poet/runtime/executor.h"

namespace poet::data {

struct EpochResult {
  double mean_loss = 0;
  double accuracy = 0;  // of the training batches, as they were trained on
  std::int64_t batches = 0;
  std::vector<double> step_seconds;  // wall clock of each train_step
};

struct Evaluation {
  double accuracy = 0;
  std::int64_t samples = 0;  // whole batches only
};

// Called after each batch with (batches done, batches in the epoch, that batch's loss).
using ProgressFn = std::function<void(std::int64_t, std::int64_t, float)>;

class Trainer {
 public:
  // `shuffle_seed` keys the batch order of every epoch.
  Trainer(const Graph& g, runtime::ExecutablePlan plan, runtime::ExecutorOptions options, std::uint64_t shuffle_seed);

  std::int64_t batch_size() const { return batch_size_; }
  runtime::Executor& executor() { return executor_; }
  const runtime::Executor& executor() const { return executor_; }

  // Throws InputError if one sample of `d` does not have the graph's input size or its
  // classes exceed the loss's.
  void check_dataset(const Dataset& d) const;

  // Epoch `epoch` (from 0) over `d`: at most `max_batches` batches (0: all).
  EpochResult train_epoch(const Dataset& d, std::uint64_t epoch, std::int64_t max_batches = 0,
                          const ProgressFn& progress = {});

  // Accuracy over the whole batches of `d`, in order; leaves the model as it was.
  Evaluation evaluate(const Dataset& d);

  TrainingCheckpoint checkpoint(const std::string& model, std::uint64_t epochs_done) const;
  // Loads the checkpoint's parameters and optimizer state, and advances the step counter
  // to its steps_done. Throws InputError, with the model unchanged, if it was written for
  // another model, optimizer or seed, or if this executor has already run further.
  void restore(const TrainingCheckpoint& c, const std::string& model);

 private:
  // One step whose update is undone: its loss and predictions are the forward pass's.
  runtime::StepResult step_without_update(std::span<const float> inputs, std::span<const std::int32_t> labels);

  runtime::Executor executor_;
  Optimizer optimizer_;
  std::uint64_t seed_, shuffle_seed_;
  std::int64_t batch_size_, sample_elements_, classes_;
  std::vector<float> batch_inputs_;
  std::vector<std::int32_t> batch_labels_;
  std::vector<float> saved_values_, saved_state_;
};

}  // namespace poet::data
