// The firmware (firmware/, on an emulated Cortex-M4) and the host runtime take the same
// training steps: scripts/firmware-train.sh plans mcu_cnn for 256 KB, builds the firmware and
// runs 100 steps in QEMU; the host's Trainer runs the same 100 steps (same initial weights,
// same batches) under checkpoint-all, and every parameter tensor agrees within 1e-4 of its
// largest magnitude. The kernels differ in summation order only (the host's GEMM, the
// firmware's direct loops), so the weights differ by rounding, not by math.
//
// Skipped, saying why, where qemu-system-arm, clang or ld.lld is missing; CI installs them
// (scripts/install-deps.sh). Its own program, run in the normal tree only: under the
// sanitizers the host half would only be slower, and QEMU's half is not instrumented.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "poet/backward/backward.h"
#include "poet/cost/cost_model.h"
#include "poet/data/fashion_mnist.h"
#include "poet/lower/lower.h"
#include "poet/models/zoo.h"
#include "poet/cost/device.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/train/trainer.h"

namespace poet {
namespace {

constexpr int kSteps = 100;
constexpr int kBatch = 8;  // scripts/firmware-train.sh's
constexpr double kTolerance = 1e-4;

bool on_path(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

std::vector<float> read_floats(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> values(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(values.size() * sizeof(float)),
            reinterpret_cast<char*>(values.data()));
  return values;
}

TEST(FirmwareParity, HundredStepsInQemuGiveTheHostsWeights) {
  for (const char* tool : {"qemu-system-arm", "clang", "ld.lld", "make"})
    if (!on_path(tool))
      GTEST_SKIP() << "'" << tool << "' is not installed, so the firmware cannot be built or run here; "
                   << "scripts/install-deps.sh installs it";
  const std::filesystem::path out = std::filesystem::path(POET_FIRMWARE_TEST_DIR);
  std::filesystem::remove_all(out);
  const std::string command = std::string(POET_SOURCE_DIR) + "/scripts/firmware-train.sh --steps " +
                              std::to_string(kSteps) + " --train " + std::to_string(kSteps * kBatch) +
                              " --test 100 --out " + out.string() + " --poet " + POET_BINARY + " > " +
                              (out.parent_path() / "firmware_parity.log").string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command << "\nfailed; its output is in "
                                             << (out.parent_path() / "firmware_parity.log").string();
  const std::vector<float> firmware = read_floats(out / "weights.bin");

  // The host: the same graph, seed 0 (initial weights and batch order), SGD at 0.01.
  Graph g = build_model_training_graph("mcu_cnn", {.batch_size = kBatch}, BackwardMode::Autodiff);
  const GraphCosts costs = costs_for(g, builtin_platform("m4"));
  LoweredPlan plan = lower(g, costs, checkpoint_all_schedule(g), {});
  runtime::ExecutorOptions options;
  options.seed = 0;
  options.optimizer.learning_rate = 0.01f;
  train::Trainer trainer(g, std::move(plan), options, 0);
  const data::DatasetSplits d = data::load_fashion_mnist();
  trainer.train_epoch(d.train, 0, kSteps);
  const runtime::ParameterStore& host = trainer.executor().parameters();
  ASSERT_EQ(firmware.size(), host.all_values().size()) << "weights.bin holds another model's parameters";

  double worst = 0;
  for (const runtime::ParameterSlice& s : host.slices()) {
    double largest = 0, difference = 0;
    for (std::int64_t k = 0; k < s.count; ++k) {
      const auto i = static_cast<std::size_t>(s.offset + k);
      largest = std::max(largest, std::abs(static_cast<double>(host.all_values()[i])));
      difference = std::max(difference, std::abs(static_cast<double>(firmware[i]) - host.all_values()[i]));
    }
    const double relative = difference / largest;
    worst = std::max(worst, relative);
    EXPECT_LE(relative, kTolerance) << "parameters of '" << g.node(s.node).name << "' differ by " << difference
                                    << ", " << relative << " of their largest magnitude " << largest;
  }
  RecordProperty("worst_relative_difference", std::to_string(worst));
  std::printf("host vs firmware after %d steps: largest difference %.3g of a tensor's largest weight\n", kSteps, worst);
}

}  // namespace
}  // namespace poet
