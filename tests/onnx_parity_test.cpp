// Imported ONNX models held to PyTorch, which wrote them (scripts/export-onnx-fixtures.py):
// the runtime's logits and one step's gradients for the same weights and input, and the
// trainable parameter counts of torchvision's models.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "executor_harness.h"
#include "poet/graph/op_table.h"
#include "poet/onnx/onnx_import.h"
#include "poet/train/imported_weights.h"
#include "onnx_fixture.h"

namespace poet {
namespace {

using nlohmann::json;


json load_json(const std::string& name) {
  std::ifstream in(testing::onnx_fixture(name));
  return json::parse(in);
}

struct Imported {
  OnnxModel model;
  Graph training;
};

// The loss PyTorch trained the fixture with: an autoencoder's says "reconstruction".
TrainingLoss fixture_loss(const json& f) {
  return f.value("training_loss", "cross_entropy") == "reconstruction" ? TrainingLoss::reconstruction
                                                                        : TrainingLoss::cross_entropy;
}

Imported import_fixture(const std::string& name, int batch, TrainingLoss loss = TrainingLoss::cross_entropy) {
  OnnxModel m = import_onnx(testing::onnx_fixture(name + ".onnx"), {.batch_size = batch, .loss = loss});
  Graph g = build_training_graph(m.forward, BackwardMode::Autodiff);
  return {std::move(m), std::move(g)};
}

// The largest difference relative to the largest magnitude of the reference: the error
// of the tensor as a whole, which elements near zero do not inflate. `floor`: the smallest
// magnitude it is relative to (a gradient that is zero in exact arithmetic is rounding noise).
double relative_difference(std::span<const float> actual, const std::vector<float>& expected, double floor = 0) {
  EXPECT_EQ(actual.size(), expected.size());
  double scale = floor, diff = 0;
  for (std::size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    scale = std::max(scale, std::abs(static_cast<double>(expected[i])));
    diff = std::max(diff, std::abs(static_cast<double>(actual[i]) - expected[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

// The fixture's input as the executor takes it: numbers, or token ids as int32 bits.
std::vector<float> fixture_input(const json& f) {
  if (f.value("input_kind", "values") != "token_ids") return f["input"].get<std::vector<float>>();
  std::vector<float> ids;
  for (const std::int64_t id : f["input"].get<std::vector<std::int64_t>>())
    ids.push_back(std::bit_cast<float>(static_cast<std::int32_t>(id)));
  return ids;
}

class PyTorchParity : public ::testing::TestWithParam<const char*> {};

TEST_P(PyTorchParity, LogitsEqualPyTorchs) {
  const json f = load_json(std::string(GetParam()) + ".json");
  const std::vector<float> input = fixture_input(f);
  const auto labels = f["labels"].get<std::vector<std::int32_t>>();
  Imported m = import_fixture(GetParam(), f["input_shape"][0].get<int>(), fixture_loss(f));
  runtime::Executor e(m.training, testing::executable(m.training, checkpoint_all_schedule(m.training)));
  train::load_imported_weights(e.parameters(), m.training, m.model.parameters);
  e.evaluate(input, labels);
  const double d = relative_difference(e.evaluated_logits(), f["logits"].get<std::vector<float>>());
  EXPECT_LE(d, 1e-4) << GetParam();
  RecordProperty("logits_relative_difference", std::to_string(d));
  std::printf("%s: logits differ from PyTorch's by %.3g relative\n", GetParam(), d);
}

TEST_P(PyTorchParity, OneStepsGradientsEqualPyTorchs) {
  const json f = load_json(std::string(GetParam()) + ".json");
  const std::vector<float> input = fixture_input(f);
  const auto labels = f["labels"].get<std::vector<std::int32_t>>();
  Imported m = import_fixture(GetParam(), f["input_shape"][0].get<int>(), fixture_loss(f));
  runtime::ExecutorOptions options;
  options.optimizer.kind = Optimizer::SGD;
  runtime::Executor e(m.training, testing::executable(m.training, checkpoint_all_schedule(m.training)), options);
  train::load_imported_weights(e.parameters(), m.training, m.model.parameters);
  const runtime::StepResult r = e.train_step(input, labels);
  EXPECT_NEAR(r.loss, f["loss"].get<double>(), 1e-4 * std::max(1.0, f["loss"].get<double>()));

  const json& grads = f["gradients"];
  // A bias before a batch norm whose mean removal cancels it (MaxViT's pre_norm before
  // conv_a and its norm) has a gradient of 0 in exact arithmetic, and PyTorch's is its
  // rounding noise (5e-10): every gradient is held relative to at least 1e-3 of the
  // model's largest.
  double largest = 0;
  for (const auto& [name, g] : grads.items())
    for (const float v : g.get<std::vector<float>>()) largest = std::max(largest, std::abs(static_cast<double>(v)));
  std::size_t compared = 0;
  double worst = 0;
  for (const ImportedParameters& p : m.model.parameters) {
    NodeId id = -1;
    for (NodeId v = 0; v < static_cast<NodeId>(m.training.size()); ++v)
      if (m.training.node(v).name == p.node && m.training.node(v).role != Role::Backward) id = v;
    ASSERT_GE(id, 0) << p.node;
    const std::span<const float> gradient = e.parameters().gradient(id);
    for (const InitializerPiece& piece : p.pieces) {
      if (!grads.contains(piece.initializer)) continue;  // running statistics: not trained
      ASSERT_LE(piece.offset + piece.count, static_cast<std::int64_t>(gradient.size())) << piece.initializer;
      std::vector<float> ours(static_cast<std::size_t>(piece.count));
      for (std::int64_t i = 0; i < piece.count; ++i) {
        // The file's layout: [rows, cols] of what poet holds as [cols, rows].
        const std::int64_t k = piece.file_rows > 0 ? (i % piece.file_cols) * piece.file_rows + i / piece.file_cols : i;
        ours[static_cast<std::size_t>(i)] = gradient[static_cast<std::size_t>(piece.offset + k)];
      }
      const double d = relative_difference(ours, grads[piece.initializer].get<std::vector<float>>(), 1e-3 * largest);
      EXPECT_LE(d, 1e-4) << GetParam() << ": gradient of " << piece.initializer;
      worst = std::max(worst, d);
      ++compared;
    }
  }
  EXPECT_EQ(compared, grads.size()) << "every parameter PyTorch trains has a gradient in poet";
  std::printf("%s: %zu gradients differ from PyTorch's by at most %.3g relative\n", GetParam(), compared, worst);
}

TEST_P(PyTorchParity, TrainableParametersEqualPyTorchs) {
  const json f = load_json(std::string(GetParam()) + ".json");
  EXPECT_EQ(trainable_parameters(import_fixture(GetParam(), 1, fixture_loss(f)).model.forward),
            f["trainable_parameters"].get<std::int64_t>());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PyTorchParity, ::testing::Values("tiny_cnn", "tiny_resnet", "tiny_mlp", "tiny_inception", "tiny_fashion",
                                                                      "tiny_transformer", "tiny_vit", "tiny_mobilenet_v3",
                                                                      "tiny_convnext", "tiny_bert", "tiny_einsum", "tiny_swin",
                                                                      "tiny_maxvit", "tiny_leaky", "tiny_upsample", "tiny_group_norm", "tiny_conv1d",
                                                                      "tiny_fixed_norms", "tiny_decoder", "tiny_bilinear",
                                                                      "tiny_signal", "tiny_prelu", "tiny_spectrogram",
                                                                      "tiny_tf_padding",
                                                                      "tiny_autoencoder"));

// torchvision's models, structure only: their trainable parameters as PyTorch counts them.
TEST(OnnxTorchvision, ParameterCountsEqualPyTorchs) {
  const auto began = std::chrono::steady_clock::now();
  const Imported resnet = import_fixture("resnet18", 1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  EXPECT_EQ(trainable_parameters(resnet.model.forward), 11'689'512);
  EXPECT_FALSE(resnet.model.has_weights);
  EXPECT_EQ(trainable_parameters(import_fixture("mobilenet_v2", 1).model.forward), 3'504'872);
  EXPECT_EQ(trainable_parameters(import_fixture("mobilenet_v2", 1).model.forward),
            load_json("mobilenet_v2.json")["trainable_parameters"].get<std::int64_t>());
  std::printf("resnet18: imported with its training graph in %.3f s\n", seconds);  // reported, not judged
}

// torchvision's vit_b_16 at opset 13 (about 1,700 ONNX nodes): its parameters, the class token
// and position embedding among them, as PyTorch counts them.
TEST(OnnxTorchvision, VitB16ImportsWithPyTorchsParameterCount) {
  const Imported vit = import_fixture("vit_b_16", 1);
  EXPECT_EQ(trainable_parameters(vit.model.forward), 86'567'656);
  EXPECT_EQ(trainable_parameters(vit.model.forward), load_json("vit_b_16.json")["trainable_parameters"].get<std::int64_t>());
  EXPECT_FALSE(vit.model.has_weights);
  EXPECT_GT(vit.model.onnx_nodes, 1500);
}

// A structure-only file plans like any model, and refuses to fine-tune.
TEST(OnnxTorchvision, StructureOnlyModelsPlanButDoNotTrain) {
  const Imported resnet = import_fixture("resnet18", 2);
  EXPECT_EQ(resnet.training.node(0).shape, (Shape{2, 3, 224, 224}));
  const GraphCosts costs = testing::test_costs(resnet.training);
  EXPECT_GT(costs.nodes.size(), 0u);
  runtime::ParameterStore store(resnet.training, 0, 0);
  EXPECT_THROW(train::load_imported_weights(store, resnet.training, resnet.model.parameters), InputError);
}

}  // namespace
}  // namespace poet
