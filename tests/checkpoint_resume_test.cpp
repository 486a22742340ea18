// What a checkpoint remembers of its run, so that --resume continues that run and nothing
// else (the batch size and the data decide every step), and that a run starting afresh
// never replaces a checkpoint or a file that is none.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

#include "poet/data/dataset.h"
#include "poet/paging/checksum.h"
#include "poet/train/checkpoint_file.h"
#include "poet/train/trainer.h"
#include "poet/util/error.h"

namespace poet {
namespace {

namespace fs = std::filesystem;

std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

train::TrainingCheckpoint written(std::uint64_t batch_size, std::string data) {
  return {.model = "lenet5",
          .epochs_done = 3,
          .steps_done = 300,
          .seed = 7,
          .optimizer = static_cast<std::uint32_t>(Optimizer::Momentum),
          .batch_size = batch_size,
          .data = std::move(data),
          .parameters = {0.5f},
          .optimizer_state = {}};
}

const train::RunIdentity kRun{.model = "lenet5", .optimizer = Optimizer::Momentum, .seed = 7, .batch_size = 32};

TEST(CheckpointResume, AnotherBatchSizeIsRefusedBeforeAnythingIsLoaded) {
  EXPECT_EQ(refusal([] { train::check_resumable(written(32, "d"), kRun); }), "accepted");
  EXPECT_EQ(refusal([] { train::check_resumable(written(16, "d"), kRun); }),
            "the checkpoint was written with batches of 16 samples, and this run's are of 32 (--batch-size); resume "
            "with the options it was trained with, or remove the checkpoint (or give another --checkpoint) and "
            "train without --resume to start afresh");
}

TEST(CheckpointResume, OtherDataAreRefused) {
  data::DatasetSplits pictures;
  pictures.name = "folder:/data/pics";
  pictures.train.labels.assign(39, 0);
  pictures.train.classes = 2;
  pictures.class_names = "'disc', 'stripes'";
  const std::string two = data::identity(pictures);
  EXPECT_EQ(two, "folder, 2 classes ('disc', 'stripes'), 39 training samples");
  // A class folder added shifts every label: the same count of pictures is other data.
  data::DatasetSplits three = pictures;
  three.train.classes = 3;
  three.class_names = "'apple', 'disc', 'stripes'";
  EXPECT_EQ(refusal([&] { train::check_same_data(written(32, two), two); }), "accepted");
  const std::string why = refusal([&] { train::check_same_data(written(32, two), data::identity(three)); });
  EXPECT_NE(why.find("the checkpoint was written training on folder, 2 classes ('disc', 'stripes'), 39 training "
                     "samples, and this run's data is folder, 3 classes ('apple', 'disc', 'stripes'), 39 training "
                     "samples"),
            std::string::npos)
      << why;
  // The same pictures moved elsewhere are the same data.
  data::DatasetSplits moved = pictures;
  moved.name = "folder:/elsewhere/pics";
  EXPECT_EQ(data::identity(moved), two);
}

// A checkpoint of format version 1 (before the batch size and the data were kept) still
// resumes; what it did not record is not checked.
TEST(CheckpointResume, VersionOneIsStillRead) {
  std::string v1 = "POETCKPT";
  const auto put = [&v1](const auto& value) { v1.append(reinterpret_cast<const char*>(&value), sizeof value); };
  put(std::uint32_t{1});
  put(std::uint64_t{3});    // epochs
  put(std::uint64_t{300});  // steps
  put(std::uint64_t{7});    // seed
  put(static_cast<std::uint32_t>(Optimizer::Momentum));
  put(std::uint32_t{6});
  v1 += "lenet5";
  put(std::uint64_t{1});
  put(0.5f);
  put(std::uint64_t{0});
  put(paging::crc32_of(std::as_bytes(std::span<const char>(v1.data(), v1.size()))));
  const train::TrainingCheckpoint c = train::decode_checkpoint(v1, "old.ckpt");
  EXPECT_EQ(c.model, "lenet5");
  EXPECT_EQ(c.steps_done, 300u);
  EXPECT_EQ(c.batch_size, 0u);
  EXPECT_EQ(c.data, "");
  EXPECT_EQ(c.learning_rate, 0.0f);  // not recorded: the run's --lr, or the optimizer's usual rate
  EXPECT_EQ(refusal([&] { train::check_resumable(c, {.model = "lenet5", .optimizer = Optimizer::Momentum, .seed = 7,
                                                     .batch_size = 64}); }),
            "accepted");
  EXPECT_EQ(refusal([&] { train::check_same_data(c, "anything"); }), "accepted");
}

// `train --checkpoint F` without --resume: "my notes" or last week's three epochs were
// replaced without a word.
TEST(CheckpointResume, ANewRunReplacesNothingButAnEmptyFile) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("poet_new_ckpt_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string missing = (dir / "missing.ckpt").string(), empty = (dir / "empty.ckpt").string(),
                    notes = (dir / "notes.txt").string(), earlier = (dir / "earlier.ckpt").string(),
                    damaged = (dir / "damaged.ckpt").string();
  std::ofstream{empty};
  std::ofstream{notes} << "my precious notes";
  train::save_checkpoint(earlier, written(32, "d"));
  std::ofstream{damaged} << "POETCKPT and then nothing a checkpoint holds";
  EXPECT_EQ(refusal([&] { train::check_free_for_a_new_checkpoint(missing, "lenet5"); }), "accepted");
  EXPECT_EQ(refusal([&] { train::check_free_for_a_new_checkpoint(empty, "lenet5"); }), "accepted");  // mktemp's
  EXPECT_EQ(refusal([&] { train::check_free_for_a_new_checkpoint(notes, "lenet5"); }),
            "--checkpoint '" + notes +
                "' is a file that is not a poet checkpoint, which training would replace; give another "
                "--checkpoint path, or remove the file");
  EXPECT_EQ(refusal([&] { train::check_free_for_a_new_checkpoint(earlier, "lenet5"); }),
            "--checkpoint '" + earlier +
                "' holds a checkpoint of lenet5 after epoch 3: continue it with --resume, or remove it, or give "
                "another --checkpoint, to start afresh");
  EXPECT_EQ(refusal([&] { train::check_free_for_a_new_checkpoint(earlier, "mcu_cnn"); }),
            "--checkpoint '" + earlier +
                "' holds a checkpoint of lenet5 after epoch 3, not of mcu_cnn; remove it, or give another "
                "--checkpoint, to start afresh");
  EXPECT_EQ(refusal([&] { train::check_free_for_a_new_checkpoint(damaged, "lenet5"); }),
            "--checkpoint '" + damaged +
                "' holds a damaged poet checkpoint; remove it, or give another --checkpoint, to start afresh");
  std::ifstream in(notes);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "my precious notes");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace poet
