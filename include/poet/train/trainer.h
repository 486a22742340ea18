// The training loop around one Executor: epochs over a dataset in shuffled whole batches,
// evaluation, and checkpoints that resume bit-identically.
//
// Evaluation is the executor's forward pass in inference mode (Executor::evaluate: batch
// norm with its running statistics, no dropout), which changes neither the model nor the
// step counter. restore() sets the step counter to the checkpoint's, so a resumed run
// sees the step numbers (Adam's bias correction, dropout masks) of an uninterrupted one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "poet/data/dataset.h"
#include "poet/runtime/executor.h"
#include "poet/train/checkpoint_file.h"
#include "poet/util/error.h"

namespace poet::train {

struct EpochResult {
  double mean_loss = 0;
  double accuracy = 0;  // of the training batches, as they were trained on
  std::int64_t batches = 0;
  std::vector<double> step_seconds;  // wall clock of each train_step
};

struct Evaluation {
  double accuracy = 0;
  double mean_loss = 0;      // over the batches
  std::int64_t samples = 0;  // whole batches only
};

// Thrown by Trainer::train_epoch when a batch's loss, or the weights after the epoch's last
// update, are not finite: every later step would only spread the NaN, and a checkpoint or
// export written from here would hold no model. An input error, as the fix is the user's
// (a lower --lr, or data without NaN).
class TrainingDiverged : public InputError {
 public:
  using InputError::InputError;
};

// Called after each batch with (batches done, batches in the epoch, that batch's loss).
using ProgressFn = std::function<void(std::int64_t, std::int64_t, float)>;

// The trainer feeds one dataset sample per label the loss takes: for an image classifier
// a sample is an image; for a model with a label per token (the transformer, BERT) it is a
// token's input values, so that a batch holds batch x tokens samples. These give the
// labels of one batch and the input values of one sample; the latter throws InputError
// when the graph's input does not divide evenly among its labels.
std::int64_t labels_per_batch(const Graph& g);
std::int64_t values_per_label(const Graph& g);

// Throws InputError if a sample of `d` does not have values_per_label(g) values, `d` holds
// fewer samples than a batch, or its classes exceed the loss's. `poet train` calls it
// before planning, the trainer before each pass.
void check_dataset_fits(const Graph& g, const data::Dataset& d);

// Throws InputError if a batch norm of `g` normalises one value per channel (a BatchNorm1d
// at batch 1): the batch's variance is 0 and its output a constant, which PyTorch refuses in
// training too ("Expected more than 1 value per channel when training").
void check_batch_statistics(const Graph& g);

// What a checkpoint's run was: a resumed run must be the same to continue it.
struct RunIdentity {
  std::string model;
  Optimizer optimizer;
  std::uint64_t seed = 0;
  std::uint64_t batch_size = 0;  // samples (labels) a batch: labels_per_batch
};

// Throws InputError if checkpoint `c` was written for another model, optimizer, seed or
// batch size, or holds weights that are not finite: what restore() checks that needs no
// trainer, so that a wrong --resume is refused before the plan is made and the data loaded.
void check_resumable(const TrainingCheckpoint& c, const RunIdentity& run);
// Throws InputError if `c` was written training on other data than `data` (data::identity).
void check_same_data(const TrainingCheckpoint& c, const std::string& data);

class Trainer {
 public:
  // `shuffle_seed` keys the batch order of every epoch.
  Trainer(const Graph& g, LoweredPlan plan, runtime::ExecutorOptions options, std::uint64_t shuffle_seed);

  std::int64_t batch_size() const { return batch_size_; }
  runtime::Executor& executor() { return executor_; }
  const runtime::Executor& executor() const { return executor_; }

  // check_dataset_fits for this trainer's graph.
  void check_dataset(const data::Dataset& d) const;

  // Epoch `epoch` (from 0) over `d`: at most `max_batches` batches (0: all). Throws
  // TrainingDiverged as soon as a loss is not finite, or if the weights are not at the end.
  EpochResult train_epoch(const data::Dataset& d, std::uint64_t epoch, std::int64_t max_batches = 0,
                          const ProgressFn& progress = {});

  // Accuracy over the whole batches of `d`, in order, in inference mode; leaves the model
  // and the step counter as they were.
  Evaluation evaluate(const data::Dataset& d);

  // After `epochs_done` epochs of training `model` on `data` (data::identity).
  TrainingCheckpoint checkpoint(const std::string& model, const std::string& data, std::uint64_t epochs_done) const;
  // Loads the checkpoint's parameters (with the batch-norm running statistics) and
  // optimizer state, and sets the step counter to its steps_done. Throws InputError, with
  // the model unchanged, if it was written for another model, optimizer, seed or batch
  // size, or holds weights that are not finite.
  void restore(const TrainingCheckpoint& c, const std::string& model);

 private:
  runtime::Executor executor_;
  Optimizer optimizer_;
  float learning_rate_;
  bool updated_ = false;  // a step of this trainer has updated the weights
  std::uint64_t seed_, shuffle_seed_;
  TrainingDiverged diverged(const std::string& where) const;

  std::int64_t batch_size_, sample_elements_, classes_;
  std::vector<float> batch_inputs_;
  std::vector<std::int32_t> batch_labels_;
};

}  // namespace poet::train
