// ONNX export writes the trained weights back, so that importing the result gives them
// again; and weights that cannot be trained from are refused by name.
#include <gtest/gtest.h>

#include <limits>

#include "executor_harness.h"
#include "poet/onnx/onnx_import.h"
#include "poet/train/imported_weights.h"
#include "poet/util/error.h"
#include "onnx_builder.h"
#include "onnx_fixture.h"

namespace poet {
namespace {

using namespace testing::onnx_builder;

// One SGD step on a fixture, then export: the exported file imports with exactly the
// trained weights (batch-norm running statistics, layer norms found in their
// decomposition, class tokens and position embeddings included).
class OnnxExportRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(OnnxExportRoundTrip, GivesTheTrainedWeights) {
  OnnxModel m = import_onnx(testing::onnx_fixture(std::string(GetParam()) + ".onnx"), {.batch_size = 4});
  const Graph g = build_training_graph(m.forward, BackwardMode::Autodiff);
  runtime::ExecutorOptions options;
  options.optimizer.kind = Optimizer::SGD;
  options.optimizer.learning_rate = 0.1f;
  runtime::Executor e(g, testing::executable(g, checkpoint_all_schedule(g)), options);
  train::load_imported_weights(e.parameters(), g, m.parameters);
  const std::vector<ImportedParameters> before = m.parameters;
  const testing::Batch b = testing::synthetic_batch(e, 3);
  e.train_step(b.inputs, b.labels);
  train::take_trained_weights(e.parameters(), g, m.parameters);

  const std::string out = temp_path(std::string(GetParam()) + "_trained.onnx");
  export_onnx(m, out);
  const OnnxModel back = import_onnx(out, {.batch_size = 4});
  ASSERT_EQ(back.parameters.size(), m.parameters.size());
  bool changed = false;
  for (std::size_t i = 0; i < m.parameters.size(); ++i) {
    EXPECT_EQ(back.parameters[i].node, m.parameters[i].node);
    EXPECT_TRUE(testing::same_bits(back.parameters[i].values, m.parameters[i].values)) << m.parameters[i].node;
    changed = changed || !testing::same_bits(before[i].values, m.parameters[i].values);
  }
  EXPECT_TRUE(changed) << "the step trained the weights";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OnnxExportRoundTrip,
                         ::testing::Values("tiny_resnet", "tiny_transformer", "tiny_vit", "tiny_bert", "tiny_fixed_norms"));

// Fine-tuning cannot start from weights that are NaN: the node is named, and the store
// keeps what it held.
TEST(OnnxImport, WeightsThatAreNotFiniteAreRefusedByName) {
  OnnxModel m = import_onnx(testing::onnx_fixture("tiny_resnet.onnx"), {.batch_size = 2});
  const Graph g = build_training_graph(m.forward, BackwardMode::Autodiff);
  runtime::Executor e(g, testing::executable(g, checkpoint_all_schedule(g)), {});
  m.parameters.back().values.back() = std::numeric_limits<float>::infinity();
  try {
    train::load_imported_weights(e.parameters(), g, m.parameters);
    ADD_FAILURE() << "an infinite weight was loaded";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("node '" + m.parameters.back().node + "'"), std::string::npos)
        << error.what();
  }
}

// torch shares one initializer between equal tensors through Identity nodes; each layer
// trains its own copy, and export gives each its own initializer.
TEST(OnnxExport, WeightsSharedThroughIdentityAreWrittenApart) {
  const std::string path = write_model("shared", {1, 4}, {1, 4}, [](auto& g) {
    add_initializer(g, "w", {4, 4}, 0.5f);
    add_node(g, "alias", "Identity", {"w"}, "w2");
    add_node(g, "fc1", "MatMul", {"x", "w"}, "h");
    add_node(g, "act", "Relu", {"h"}, "r");
    add_node(g, "fc2", "MatMul", {"r", "w2"}, "y");
  });
  OnnxModel m = import_onnx(path, {.batch_size = 1});
  ASSERT_EQ(m.parameters.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t k = 0; k < m.parameters[i].values.size(); ++k)
      m.parameters[i].values[k] = static_cast<float>(i * 100 + k);
  const std::string out = temp_path("shared_trained.onnx");
  export_onnx(m, out);
  const OnnxModel back = import_onnx(out, {.batch_size = 1});
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_TRUE(testing::same_bits(back.parameters[i].values, m.parameters[i].values)) << m.parameters[i].node;
}

TEST(OnnxExport, StructureOnlyModelHasNothingToExport) {
  const OnnxModel m = import_onnx(testing::onnx_fixture("resnet18.onnx"), {.batch_size = 1});
  EXPECT_THROW(export_onnx(m, temp_path("resnet18_out.onnx")), InputError);
}

}  // namespace
}  // namespace poet
