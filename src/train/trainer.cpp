#include "poet/train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>

#include "poet/data/batches.h"
#include "poet/graph/op.h"
#include "poet/graph/op_table.h"
#include "poet/util/error.h"

namespace poet::train {

Trainer::Trainer(const Graph& g, LoweredPlan plan, runtime::ExecutorOptions options,
                 std::uint64_t shuffle_seed)
    : executor_(g, std::move(plan), options),
      optimizer_(options.optimizer.kind),
      learning_rate_(options.optimizer.learning_rate),
      seed_(options.seed),
      shuffle_seed_(shuffle_seed),
      batch_size_(static_cast<std::int64_t>(executor_.label_count())),
      sample_elements_(static_cast<std::int64_t>(executor_.input_elements()) / batch_size_),
      classes_(g.node(g.loss()).shape.back()),
      batch_inputs_(executor_.input_elements()),
      batch_labels_(executor_.label_count()) {}

// The labels of one batch, as the executor counts them: the loss's elements per class.
std::int64_t labels_per_batch(const Graph& g) {
  const Shape& loss = g.node(g.loss()).shape;
  return element_count(loss) / (loss.empty() ? 1 : std::max<std::int64_t>(loss.back(), 1));
}

std::int64_t values_per_label(const Graph& g) {
  const std::int64_t labels = std::max<std::int64_t>(labels_per_batch(g), 1);
  for (const Node& n : g.nodes())
    if (n.op == OpKind::Input && !n.shape.empty()) {
      if (element_count(n.shape) % labels != 0)
        throw InputError(fmt::format("model '{}' takes {} input values for {} labels per batch, which do not divide "
                                     "evenly into samples; poet train needs the same number of values per label",
                                     g.name(), element_count(n.shape), labels));
      return element_count(n.shape) / labels;
    }
  return 0;
}

void check_batch_statistics(const Graph& g) {
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::BatchNorm2d || n.inputs.empty()) continue;
    const Shape& in = g.node(n.inputs[0]).shape;
    if (in.size() < 2 || in[1] <= 0) continue;
    std::int64_t values = 1;
    for (const std::int64_t d : in) values *= d;
    if (values / in[1] <= 1)
      throw InputError(fmt::format("batch norm '{}' normalises {} value a channel at this batch size ({}), so the "
                                   "batch's variance is 0 and its output a constant; give --batch-size 2 or more",
                                   n.name, values / in[1], shape_string(in)));
  }
}

void check_dataset_fits(const Graph& g, const data::Dataset& d) {
  const std::int64_t labels = labels_per_batch(g);
  const Shape& loss = g.node(g.loss()).shape;
  const std::int64_t classes = loss.empty() ? 1 : loss.back();
  const std::int64_t sample_elements = values_per_label(g);
  if (d.sample_elements() != sample_elements)
    throw InputError(
        fmt::format("a sample of the dataset has {} values but model '{}' takes {} per sample; choose a "
                    "dataset that matches the model's input",
                    d.sample_elements(), g.name(), sample_elements));
  const std::int64_t vocabulary = token_vocabulary(g);
  if (vocabulary > 0 && d.vocabulary == 0)
    throw InputError(fmt::format("model '{}' takes token ids (an embedding of {} tokens reads its input), and the "
                                 "dataset's samples are numbers, not token ids; train it on --dataset synthetic, "
                                 "which makes token sequences for it",
                                 g.name(), vocabulary));
  if (vocabulary == 0 && d.vocabulary > 0)
    throw InputError(fmt::format("the dataset's samples are token ids, and model '{}' takes numbers (no embedding "
                                 "reads its input); choose a dataset that matches the model's input",
                                 g.name()));
  if (d.vocabulary > vocabulary)
    throw InputError(fmt::format("the dataset's token ids go up to {}, beyond the {} tokens of model '{}''s "
                                 "embedding; choose a dataset of its vocabulary",
                                 d.vocabulary - 1, vocabulary, g.name()));
  if (d.count() < labels)
    throw InputError(fmt::format("the batch of {} samples is larger than the dataset's {} samples, so no batch would "
                                 "be trained; lower --batch-size to at most {}",
                                 labels, d.count(), d.count()));
  if (d.classes > classes)
    throw InputError(fmt::format("the dataset has {} classes but model '{}' predicts {}; choose a matching model",
                                 d.classes, g.name(), classes));
}

void Trainer::check_dataset(const data::Dataset& d) const { check_dataset_fits(executor_.graph(), d); }

namespace {

bool all_finite(std::span<const float> values) {
  return std::ranges::all_of(values, [](float v) { return std::isfinite(v); });
}

}  // namespace

TrainingDiverged Trainer::diverged(const std::string& where) const {
  return TrainingDiverged(fmt::format(
      "training diverged: {}, and every later step would only spread it; the learning rate ({:g}) is too high "
      "for this model and batch: lower --lr (e.g. to a tenth) and train again",
      where, learning_rate_));
}

EpochResult Trainer::train_epoch(const data::Dataset& d, std::uint64_t epoch, std::int64_t max_batches,
                                 const ProgressFn& progress) {
  check_dataset(d);
  const std::vector<std::int64_t> order = data::shuffled_order(d.count(), shuffle_seed_, epoch);
  std::int64_t batches = data::batch_count(d.count(), batch_size_);
  if (max_batches > 0) batches = std::min(batches, max_batches);
  EpochResult result;
  result.step_seconds.reserve(static_cast<std::size_t>(batches));
  double loss_sum = 0;
  std::int64_t correct = 0, rows = 0;
  for (std::int64_t b = 0; b < batches; ++b) {
    fill_batch(d, order, b, batch_size_, batch_inputs_, batch_labels_);
    const auto began = std::chrono::steady_clock::now();
    const runtime::StepResult r = executor_.train_step(batch_inputs_, batch_labels_);
    result.step_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    if (!std::isfinite(r.loss)) {
      const std::string loss = std::isnan(r.loss) ? "nan" : fmt::format("{}", r.loss);  // not "-nan"
      // Before any update the learning rate has done nothing yet.
      if (!updated_)
        throw TrainingDiverged(fmt::format(
            "the loss of the first batch (epoch {}, batch {}) is {} before any update: the model's weights or "
            "the batch's samples hold a value that is not finite, or one too large for float arithmetic; check the "
            "model's weights and the dataset",
            epoch + 1, b + 1, loss));
      throw diverged(fmt::format("the loss of epoch {}, batch {} is {}", epoch + 1, b + 1, loss));
    }
    updated_ = true;
    loss_sum += r.loss;
    correct += r.correct;
    rows += r.rows;
    if (progress) progress(b + 1, batches, r.loss);
  }
  if (!all_finite(executor_.parameters().all_values()))
    throw diverged(fmt::format("after epoch {}'s last update a weight is not finite", epoch + 1));
  result.batches = batches;
  result.mean_loss = batches > 0 ? loss_sum / static_cast<double>(batches) : 0;
  result.accuracy = rows > 0 ? static_cast<double>(correct) / static_cast<double>(rows) : 0;
  return result;
}

Evaluation Trainer::evaluate(const data::Dataset& d) {
  check_dataset(d);
  std::vector<std::int64_t> order(static_cast<std::size_t>(d.count()));
  for (std::int64_t i = 0; i < d.count(); ++i) order[static_cast<std::size_t>(i)] = i;
  std::int64_t correct = 0, rows = 0;
  double loss_sum = 0;
  const std::int64_t batches = data::batch_count(d.count(), batch_size_);
  for (std::int64_t b = 0; b < batches; ++b) {
    fill_batch(d, order, b, batch_size_, batch_inputs_, batch_labels_);
    const runtime::StepResult r = executor_.evaluate(batch_inputs_, batch_labels_);
    correct += r.correct;
    rows += r.rows;
    loss_sum += r.loss;
  }
  return {.accuracy = rows > 0 ? static_cast<double>(correct) / static_cast<double>(rows) : 0,
          .mean_loss = batches > 0 ? loss_sum / static_cast<double>(batches) : 0,
          .samples = rows};
}

TrainingCheckpoint Trainer::checkpoint(const std::string& model, const std::string& data,
                                       std::uint64_t epochs_done) const {
  const auto& p = executor_.parameters();
  return {.model = model,
          .epochs_done = epochs_done,
          .steps_done = executor_.steps_done(),
          .seed = seed_,
          .optimizer = static_cast<std::uint32_t>(optimizer_),
          .batch_size = static_cast<std::uint64_t>(batch_size_),
          .data = data,
          .learning_rate = learning_rate_,
          .parameters = {p.all_values().begin(), p.all_values().end()},
          .optimizer_state = {p.optimizer_state().begin(), p.optimizer_state().end()}};
}

namespace {
constexpr std::string_view kStartAfresh =
    "remove the checkpoint (or give another --checkpoint) and train without --resume to start afresh";

InputError resume_mismatch(const std::string& what) {
  return InputError(
      fmt::format("the checkpoint was written {}; resume with the options it was trained with, or {}", what,
                  kStartAfresh));
}
}  // namespace

void check_resumable(const TrainingCheckpoint& c, const RunIdentity& run) {
  if (c.model != run.model) throw resume_mismatch(fmt::format("for model '{}', not '{}'", c.model, run.model));
  if (c.optimizer != static_cast<std::uint32_t>(run.optimizer)) throw resume_mismatch("with another --optimizer");
  if (c.seed != run.seed) throw resume_mismatch(fmt::format("with --seed {}, not {}", c.seed, run.seed));
  // The batches decide every step: another size is another run (version 1 did not record it).
  if (c.batch_size != 0 && c.batch_size != run.batch_size)
    throw resume_mismatch(fmt::format("with batches of {} samples, and this run's are of {} (--batch-size)",
                                      c.batch_size, run.batch_size));
  if (!all_finite(c.parameters) || !all_finite(c.optimizer_state))
    throw InputError(fmt::format(
        "the checkpoint holds weights that are not finite (inf or nan), written by a run that diverged; {}, with a "
        "lower --lr",
        kStartAfresh));
}

void check_same_data(const TrainingCheckpoint& c, const std::string& data) {
  if (!c.data.empty() && c.data != data)
    throw resume_mismatch(fmt::format("training on {}, and this run's data is {}", c.data, data));
}

void Trainer::restore(const TrainingCheckpoint& c, const std::string& model) {
  auto& p = executor_.parameters();
  check_resumable(c, {.model = model, .optimizer = optimizer_, .seed = seed_,
                      .batch_size = static_cast<std::uint64_t>(batch_size_)});
  if (c.optimizer_state.size() != p.optimizer_state().size()) throw resume_mismatch("with another --optimizer");
  if (c.parameters.size() != p.all_values().size())
    throw resume_mismatch(
        fmt::format("for {} parameters, and this model has {}", c.parameters.size(), p.all_values().size()));
  executor_.set_steps_done(c.steps_done);
  std::ranges::copy(c.parameters, p.all_values().begin());
  std::ranges::copy(c.optimizer_state, p.optimizer_state().begin());
}

}  // namespace poet::train
