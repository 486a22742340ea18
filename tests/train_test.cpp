// The training loop: it learns, its checkpoints resume bit-identically, and a damaged
// checkpoint is refused without touching the model or the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "executor_harness.h"
#include "poet/data/synthetic_dataset.h"
#include "poet/train/checkpoint_file.h"
#include "poet/train/trainer.h"

namespace poet::testing {
namespace {

namespace fs = std::filesystem;

data::DatasetSplits lenet_data(std::int64_t train, std::int64_t test) {
  return data::make_synthetic_dataset(
      {.sample_shape = {1, 28, 28}, .classes = 10, .train_count = train, .test_count = test, .seed = 3});
}

runtime::ExecutorOptions options(Optimizer kind, float lr) {
  runtime::ExecutorOptions o;
  o.seed = 11;
  o.optimizer.kind = kind;
  o.optimizer.learning_rate = lr;
  return o;
}

std::vector<float> values(const train::Trainer& t) {
  const auto v = t.executor().parameters().all_values();
  return {v.begin(), v.end()};
}

std::vector<float> optimizer_state(const train::Trainer& t) {
  const auto s = t.executor().parameters().optimizer_state();
  return {s.begin(), s.end()};
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Train, SyntheticTrainingReducesTheLossAndLearns) {
  const Graph g = training_graph("lenet5", 16);
  const data::DatasetSplits d = lenet_data(512, 128);
  train::Trainer t(g, executable(g, chen_sqrt_schedule(g)), options(Optimizer::Momentum, 0.01f), 1);
  const double before = t.evaluate(d.test).accuracy;
  const train::EpochResult first = t.train_epoch(d.train, 0);
  const train::EpochResult second = t.train_epoch(d.train, 1);
  const double after = t.evaluate(d.test).accuracy;
  EXPECT_EQ(first.batches, 32);
  EXPECT_EQ(first.step_seconds.size(), 32u);
  EXPECT_LT(second.mean_loss, first.mean_loss * 0.7) << first.mean_loss << " -> " << second.mean_loss;
  EXPECT_GT(after, 0.9) << "before training " << before;
}

TEST(Train, EvaluationLeavesTheModelUnchanged) {
  const Graph g = training_graph("lenet5", 8);
  const data::DatasetSplits d = lenet_data(64, 32);
  train::Trainer t(g, executable(g, checkpoint_all_schedule(g)), options(Optimizer::Adam, 1e-3f), 1);
  t.train_epoch(d.train, 0, 2);
  const std::vector<float> trained = values(t), moments = optimizer_state(t);
  const auto first = t.evaluate(d.test), again = t.evaluate(d.test);
  EXPECT_EQ(first.accuracy, again.accuracy);
  EXPECT_EQ(first.samples, 32);
  EXPECT_TRUE(same_bits(trained, values(t)));
  EXPECT_TRUE(same_bits(moments, optimizer_state(t)));
  EXPECT_EQ(t.executor().steps_done(), 2u);
}

// restore() sets the step counter instead of running steps to reach it: a checkpoint a
// billion steps in restores at once, runs nothing, and may go back as well as forward.
TEST(Train, RestoreSetsTheStepCounterWithoutRunningSteps) {
  const Graph g = training_graph("lenet5", 4);
  const data::DatasetSplits d = lenet_data(16, 4);
  train::Trainer fresh(g, executable(g, checkpoint_all_schedule(g)), options(Optimizer::Adam, 1e-3f), 1);
  train::TrainingCheckpoint far = fresh.checkpoint("lenet5", "data", 1);
  far.steps_done = 1'000'000'000;
  far.parameters.assign(far.parameters.size(), 0.25f);
  train::Trainer t(g, executable(g, checkpoint_all_schedule(g)), options(Optimizer::Adam, 1e-3f), 1);
  t.restore(far, "lenet5");
  EXPECT_EQ(t.executor().steps_done(), far.steps_done);
  EXPECT_EQ(t.executor().peak_live_bytes(), 0) << "restore ran a step";
  EXPECT_TRUE(same_bits(far.parameters, values(t)));
  t.train_epoch(d.train, 0, 1);
  t.restore(fresh.checkpoint("lenet5", "data", 0), "lenet5");
  EXPECT_EQ(t.executor().steps_done(), 0u);
  EXPECT_TRUE(same_bits(values(fresh), values(t)));
  EXPECT_TRUE(same_bits(optimizer_state(fresh), optimizer_state(t)));
}

// Epoch 1, a checkpoint, then a fresh process resumes for epoch 2: the weights and the
// optimizer state end bit-identical to two epochs straight through. Adam, because its
// bias correction depends on the step counter the checkpoint carries; a recomputing plan,
// because that is what poet runs.
TEST(Train, ResumeAfterEpochOneIsBitIdenticalToAnUninterruptedRun) {
  const Graph g = training_graph("lenet5", 8);
  const data::DatasetSplits d = lenet_data(128, 32);
  const auto plan = [&g] { return executable(g, chen_sqrt_schedule(g)); };
  const fs::path file = fs::path(::testing::TempDir()) / ("poet_resume_" + std::to_string(::getpid()) + ".ckpt");

  train::Trainer straight(g, plan(), options(Optimizer::Adam, 1e-3f), 5);
  straight.train_epoch(d.train, 0);
  straight.evaluate(d.test);
  train::save_checkpoint(file.string(), straight.checkpoint("lenet5", "data", 1));
  straight.train_epoch(d.train, 1);

  train::Trainer resumed(g, plan(), options(Optimizer::Adam, 1e-3f), 5);
  const train::TrainingCheckpoint c = train::load_checkpoint(file.string());
  EXPECT_EQ(c.epochs_done, 1u);
  resumed.restore(c, "lenet5");
  EXPECT_EQ(resumed.executor().steps_done(), c.steps_done);
  resumed.train_epoch(d.train, 1);

  EXPECT_TRUE(same_bits(values(straight), values(resumed)));
  EXPECT_TRUE(same_bits(optimizer_state(straight), optimizer_state(resumed)));
  fs::remove(file);
}

TEST(Train, CheckpointRoundTripsExactly) {
  const train::TrainingCheckpoint c{.model = "lenet5",
                                    .epochs_done = 2,
                                    .steps_done = 700,
                                    .seed = 9,
                                    .optimizer = 2,
                                    .batch_size = 32,
                                    .data = "synthetic, 10 classes, 512 training samples",
                                    .learning_rate = 0.1f,
                                    .parameters = {1.5f, -0.0f, 3e-38f},
                                    .optimizer_state = {0.25f}};
  const train::TrainingCheckpoint back = train::decode_checkpoint(train::encode_checkpoint(c), "memory");
  EXPECT_EQ(back.model, "lenet5");
  EXPECT_EQ(back.epochs_done, 2u);
  EXPECT_EQ(back.steps_done, 700u);
  EXPECT_EQ(back.seed, 9u);
  EXPECT_EQ(back.optimizer, 2u);
  EXPECT_EQ(back.batch_size, 32u);
  EXPECT_EQ(back.data, c.data);
  EXPECT_EQ(back.learning_rate, 0.1f);
  EXPECT_TRUE(same_bits(back.parameters, c.parameters));
  EXPECT_TRUE(same_bits(back.optimizer_state, c.optimizer_state));
}

// SGD keeps no optimizer state: an empty section reads back as empty (found by fuzzing:
// the reader handed memcpy the null data() of an empty vector, undefined behaviour).
TEST(Train, CheckpointWithEmptySectionsRoundTrips) {
  train::TrainingCheckpoint c;
  c.model = "mlp";
  c.epochs_done = 1;
  const train::TrainingCheckpoint back = train::decode_checkpoint(train::encode_checkpoint(c), "memory");
  EXPECT_EQ(back.model, "mlp");
  EXPECT_TRUE(back.parameters.empty());
  EXPECT_TRUE(back.optimizer_state.empty());
}

TEST(Train, DamagedCheckpointIsRefusedAndNeitherModelNorFileChange) {
  const Graph g = training_graph("lenet5", 4);
  train::Trainer t(g, executable(g, checkpoint_all_schedule(g)), options(Optimizer::Momentum, 0.01f), 1);
  const fs::path file = fs::path(::testing::TempDir()) / ("poet_damaged_" + std::to_string(::getpid()) + ".ckpt");
  train::save_checkpoint(file.string(), t.checkpoint("lenet5", "data", 1));
  std::string bytes = file_bytes(file);
  bytes[bytes.size() / 2] ^= 0x40;  // one bit in the parameters
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  try {
    train::load_checkpoint(file.string());
    ADD_FAILURE() << "a damaged checkpoint was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is damaged"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(file_bytes(file), bytes) << "loading changed the file";
  // Cut short, and not a checkpoint at all.
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes.substr(0, 40);
  EXPECT_THROW(train::load_checkpoint(file.string()), InputError);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "weights";
  EXPECT_THROW(train::load_checkpoint(file.string()), InputError);
  fs::remove(file);
  EXPECT_THROW(train::load_checkpoint(file.string()), InputError);

  // A checkpoint of another model or optimizer leaves the weights as they were.
  const std::vector<float> before = values(t);
  train::TrainingCheckpoint other = t.checkpoint("lenet5", "data", 1);
  other.parameters.assign(other.parameters.size(), 0.5f);
  other.optimizer = static_cast<std::uint32_t>(Optimizer::Adam);
  EXPECT_THROW(t.restore(other, "lenet5"), InputError);
  EXPECT_THROW(t.restore(t.checkpoint("lenet5", "data", 1), "linear"), InputError);
  EXPECT_TRUE(same_bits(before, values(t)));
}

// A learning rate far too high makes the loss NaN within a few steps. The epoch stops at
// that batch with an error naming it and the fix, before a checkpoint could take the NaN
// weights; a checkpoint that holds them (an older poet wrote them) is refused on resume.
TEST(Train, ADivergingRunStopsAtTheFirstLossThatIsNotFinite) {
  const Graph g = training_graph("lenet5", 8);
  const data::DatasetSplits d = lenet_data(64, 8);
  train::Trainer t(g, executable(g, checkpoint_all_schedule(g)), options(Optimizer::SGD, 1e30f), 1);
  std::int64_t batches_seen = 0;
  try {
    t.train_epoch(d.train, 0, 0, [&](std::int64_t done, std::int64_t, float) { batches_seen = done; });
    ADD_FAILURE() << "a run with the loss NaN went on";
  } catch (const train::TrainingDiverged& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("epoch 1, batch 2 is nan"), std::string::npos) << what;
    EXPECT_NE(what.find("lower --lr"), std::string::npos) << what;
  }
  EXPECT_EQ(batches_seen, 1) << "the epoch went on past the batch whose loss was NaN";

  train::Trainer fresh(g, executable(g, checkpoint_all_schedule(g)), options(Optimizer::SGD, 0.01f), 1);
  const std::vector<float> before = values(fresh);
  EXPECT_THROW(fresh.restore(t.checkpoint("lenet5", "data", 1), "lenet5"), InputError);
  EXPECT_TRUE(same_bits(before, values(fresh)));
}

// A loss that is NaN before any update is not the learning rate's doing: the error says to
// check the weights and the data instead.
TEST(Train, ALossThatIsNotFiniteBeforeAnyUpdateBlamesTheWeightsOrData) {
  const Graph g = training_graph("lenet5", 8);
  const data::DatasetSplits d = lenet_data(64, 8);
  train::Trainer t(g, executable(g, checkpoint_all_schedule(g)), options(Optimizer::SGD, 0.01f), 1);
  std::ranges::fill(t.executor().parameters().all_values(), std::numeric_limits<float>::quiet_NaN());
  try {
    t.train_epoch(d.train, 0);
    ADD_FAILURE() << "NaN weights trained";
  } catch (const train::TrainingDiverged& e) {
    EXPECT_NE(std::string(e.what()).find("batch 1) is nan before any update"), std::string::npos) << e.what();
  }
}

TEST(Train, DatasetOfTheWrongShapeIsRefused) {
  const Graph g = training_graph("lenet5", 4);
  train::Trainer t(g, executable(g, checkpoint_all_schedule(g)), options(Optimizer::SGD, 0.01f), 1);
  const data::DatasetSplits d =
      data::make_synthetic_dataset({.sample_shape = {784}, .classes = 10, .train_count = 8, .test_count = 8});
  EXPECT_NO_THROW(t.check_dataset(d.train));  // the same number of values per sample
  const data::DatasetSplits wrong =
      data::make_synthetic_dataset({.sample_shape = {1, 8, 8}, .classes = 10, .train_count = 8, .test_count = 8});
  EXPECT_THROW(t.train_epoch(wrong.train, 0), InputError);
}

// poet train checks the data against the graph alone, before a plan or an arena exists.
TEST(Train, DataThatDoNotFitAreRefusedFromTheGraphAlone) {
  const Graph lenet = training_graph("lenet5", 4);
  EXPECT_NO_THROW(train::check_dataset_fits(lenet, lenet_data(8, 8).train));
  const auto refused = [](const Graph& g, const data::Dataset& d, const std::string& why) {
    try {
      train::check_dataset_fits(g, d);
      ADD_FAILURE() << g.name() << ": accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(lenet, lenet_data(2, 8).train, "the batch of 4 samples is larger than the dataset's 2 samples");
  refused(lenet, data::make_synthetic_dataset({.sample_shape = {1, 8, 8}, .classes = 10}).train,
          "has 64 values but model 'lenet5' takes 784");
  refused(lenet, data::make_synthetic_dataset({.sample_shape = {784}, .classes = 11}).train, "has 11 classes");
}

// A model with a label per token takes a token's values as a sample: a batch of 2
// sequences of 512 tokens is 1,024 samples of 768 values.
TEST(Train, ALabelPerTokenMakesATokenASample) {
  const Graph g = training_graph("transformer", 2);
  EXPECT_EQ(train::labels_per_batch(g), 1024);
  EXPECT_EQ(train::values_per_label(g), 768);
  EXPECT_NO_THROW(train::check_dataset_fits(
      g, data::make_synthetic_dataset({.sample_shape = {768}, .classes = 2, .train_count = 1024}).train));
  const Graph lenet = training_graph("lenet5", 4);
  EXPECT_EQ(train::labels_per_batch(lenet), 4);
  EXPECT_EQ(train::values_per_label(lenet), 784);
}

}  // namespace
}  // namespace poet::testing
