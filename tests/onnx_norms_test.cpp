// Norms without a learned scale and shift (torch's affine=False, InstanceNorm2d's default):
// the file holds constants of ones and zeros, or nothing, where an affine norm has its
// weight and bias. poet imports them as its norms with the scale and shift fixed: not
// trained, not written back. tiny_fixed_norms holds all four to PyTorch
// (onnx_parity_test.cpp); these check the importer's reading and the training.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <string>
#include <vector>

#include "executor_harness.h"
#include "onnx_builder.h"
#include "onnx_fixture.h"
#include "poet/graph/graph_json.h"
#include "poet/graph/op_table.h"
#include "poet/onnx/onnx_import.h"
#include "poet/train/imported_weights.h"

namespace poet {
namespace {

using namespace testing::onnx_builder;

// The forward node of op `op` in m, which the test needs to exist.
const Node& only_node(const OnnxModel& m, OpKind op) {
  const auto it = std::ranges::find_if(m.forward.nodes(), [op](const Node& n) { return n.op == op; });
  EXPECT_NE(it, m.forward.nodes().end()) << op_name(op);
  return it == m.forward.nodes().end() ? m.forward.node(0) : *it;
}

// InstanceNormalization of x [1, 2, 3, 3] with Constant nodes (as torch writes them) of the
// given scale and bias, or with initializers where `learned`.
std::string instance_norm(const std::string& name, std::vector<float> scale, std::vector<float> bias,
                          bool learned = false) {
  return write_model(name, {1, 2, 3, 3}, {1, 18}, [&](auto& g) {
    if (learned) {
      add_floats_initializer(g, "scale", scale);
    } else {
      add_float_constant(g, "scale", {2}, scale);
    }
    add_float_constant(g, "bias", {2}, bias);
    add_node(g, "norm", "InstanceNormalization", {"x", "scale", "bias"}, "n");
    add_node(g, "flatten", "Flatten", {"n"}, "y");
  });
}

TEST(OnnxNorms, ConstantsOfOnesAndZerosAreAFixedScaleAndShift) {
  const OnnxModel instance = import_onnx(instance_norm("instance_fixed", {1, 1}, {0, 0}), {.batch_size = 1});
  const Node& norm = only_node(instance, OpKind::GroupNorm);
  EXPECT_FALSE(norm.attrs.affine);
  EXPECT_EQ(norm.attrs.groups, 2);
  EXPECT_EQ(norm.param_count, 4);
  EXPECT_EQ(trainable_parameters(instance.forward), 0);
  ASSERT_EQ(instance.parameters.size(), 1u);
  for (const InitializerPiece& piece : instance.parameters[0].pieces)
    EXPECT_TRUE(piece.initializer.empty()) << "a fixed tensor is not written back";
  EXPECT_EQ(instance.parameters[0].values, (std::vector<float>{1, 1, 0, 0}));

  // BatchNormalization with a constant scale and bias: its running statistics stay its own.
  const std::string batch = write_model("batch_fixed", {2, 2, 3, 3}, {2, 18}, [](auto& g) {
    add_float_constant(g, "scale", {2}, {1, 1});
    add_float_constant(g, "bias", {2}, {0, 0});
    add_initializer(g, "mean", {2}, 0.5f);
    add_initializer(g, "var", {2}, 2.0f);
    add_node(g, "norm", "BatchNormalization", {"x", "scale", "bias", "mean", "var"}, "n");
    add_node(g, "flatten", "Flatten", {"n"}, "y");
  });
  const OnnxModel bn = import_onnx(batch, {.batch_size = 2});
  EXPECT_FALSE(only_node(bn, OpKind::BatchNorm2d).attrs.affine);
  EXPECT_EQ(trainable_parameters(bn.forward), 0);
  ASSERT_EQ(bn.parameters.at(0).pieces.size(), 4u);
  EXPECT_EQ(bn.parameters[0].pieces[2].initializer, "mean");

  // LayerNormalization (opset 17) with a constant scale of ones and no bias: what
  // LayerNorm(elementwise_affine=False) is in that operator.
  const std::string layer = write_model(
      "layer_fixed", {2, 5}, {2, 5},
      [](auto& g) {
        add_float_constant(g, "scale", {5}, {1, 1, 1, 1, 1});
        add_node(g, "norm", "LayerNormalization", {"x", "scale"}, "y");
      },
      17);
  const OnnxModel ln = import_onnx(layer, {.batch_size = 2});
  EXPECT_FALSE(only_node(ln, OpKind::LayerNorm).attrs.affine);
  EXPECT_EQ(ln.parameters.at(0).values, (std::vector<float>{1, 1, 1, 1, 1, 0, 0, 0, 0, 0}));

}

// A constant scale that is not ones could be neither trained nor written back; nor can half
// of a norm be learned.
TEST(OnnxNorms, ComputedScalesThatAreNotOnesAndZerosAreRefused) {
  EXPECT_TRUE(import_refused_with(instance_norm("instance_twos", {2, 2}, {0, 0}),
                                  "its scale 'scale' and shift 'bias' are constants other than ones and zeros, or "
                                  "computed from parameters: poet keeps a norm's scale and shift fixed only at 1 and "
                                  "0 (affine=False), and learns them from initializers"));
  EXPECT_TRUE(import_refused_with(instance_norm("instance_half", {1, 1}, {0, 0}, true),
                                  "its scale 'scale' is learned (an initializer) and its shift 'bias' a constant: "
                                  "poet's norm learns both its scale and shift, or neither (affine=False)"));
  const std::string layer = write_model(
      "layer_no_bias", {2, 5}, {2, 5},
      [](auto& g) {
        add_initializer(g, "scale", {5}, 1.0f);
        add_node(g, "norm", "LayerNormalization", {"x", "scale"}, "y");
      },
      17);
  EXPECT_TRUE(import_refused_with(layer, "poet's layer norm learns a bias (B) beside its scale; this one has none"));
}

// What torch 1.13 writes for LayerNorm(elementwise_affine=False) at opset 17: no scale, which
// the operator requires. ONNX's checker refuses it; the message adds the export that works.
TEST(OnnxNorms, ALayerNormWithoutItsScaleIsRefusedWithTheExportThatWorks) {
  const std::string layer = write_model(
      "layer_no_scale", {2, 5}, {2, 5}, [](auto& g) { add_node(g, "norm", "LayerNormalization", {"x", ""}, "y"); },
      17);
  EXPECT_TRUE(import_refused_with(layer, "its LayerNormalization 'norm' has no scale, as torch exports "
                                         "LayerNorm(elementwise_affine=False) at opset 17: export with "
                                         "opset_version=13, or with elementwise_affine=True"));
}

// GroupNorm's decomposition without a per-channel Mul and Add after it (here a Mul and Add
// of scalars, imported as they are): a group norm whose scale and shift are fixed.
TEST(OnnxNorms, AGroupNormWithoutItsWeightAndBiasIsFixed) {
  const std::string group = write_model("group_fixed", {2, 4, 2, 2}, {2, 16}, [](auto& g) {
    add_int64_initializer(g, "to_groups", {0, 2, -1});
    add_int64_initializer(g, "to_x", {2, 4, 2, 2});
    add_float_constant(g, "ones", {2}, {1, 1});
    add_float_constant(g, "zeros", {2}, {0, 0});
    add_float_constant(g, "two", {}, {2});
    add_float_constant(g, "half", {}, {0.5f});
    add_node(g, "split", "Reshape", {"x", "to_groups"}, "grouped");
    add_node(g, "norm", "InstanceNormalization", {"grouped", "ones", "zeros"}, "normed");
    add_node(g, "back", "Reshape", {"normed", "to_x"}, "shaped");
    add_node(g, "weight", "Mul", {"shaped", "two"}, "scaled");
    add_node(g, "bias", "Add", {"scaled", "half"}, "shifted");
    add_node(g, "flatten", "Flatten", {"shifted"}, "y");
  });
  const OnnxModel m = import_onnx(group, {.batch_size = 2});
  const Node& norm = only_node(m, OpKind::GroupNorm);
  EXPECT_FALSE(norm.attrs.affine);
  EXPECT_EQ(norm.attrs.groups, 2);
  EXPECT_EQ(trainable_parameters(m.forward), 0);
  EXPECT_EQ(m.forward.node(norm.inputs.at(0)).op, OpKind::Input);
}

// Training leaves a fixed scale and shift as they were (batch norm's running statistics
// still move), while the layers around them learn; the graph's JSON keeps `affine`.
TEST(OnnxNorms, TrainingLeavesAFixedScaleAndShiftAsTheyWere) {
  OnnxModel m = import_onnx(testing::onnx_fixture("tiny_fixed_norms.onnx"), {.batch_size = 4});
  const Graph g = build_training_graph(m.forward, BackwardMode::Autodiff);
  runtime::ExecutorOptions options;
  options.optimizer.kind = Optimizer::SGD;
  options.optimizer.learning_rate = 0.1f;
  runtime::Executor e(g, testing::executable(g, checkpoint_all_schedule(g)), options);
  train::load_imported_weights(e.parameters(), g, m.parameters);
  const std::vector<float> before(e.parameters().all_values().begin(), e.parameters().all_values().end());
  for (std::uint64_t seed = 1; seed <= 2; ++seed) {
    const testing::Batch b = testing::synthetic_batch(e, seed);
    e.train_step(b.inputs, b.labels);
  }
  int fixed = 0;
  bool trained = false;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    const Node& n = g.node(v);
    if (n.role == Role::Backward || n.param_count == 0) continue;
    const std::span<const float> now = e.parameters().values(v);
    std::vector<float> then(static_cast<std::size_t>(n.param_count));
    std::copy_n(before.begin() + (now.data() - e.parameters().all_values().data()), then.size(), then.begin());
    if (!op_def(n.op).statistics) {
      trained = trained || !std::ranges::equal(now, then);
      continue;
    }
    EXPECT_FALSE(n.attrs.affine) << n.name;
    ++fixed;
    const std::size_t scale_and_shift = n.op == OpKind::LayerNorm ? 2 * n.shape.back() : 2 * n.shape.at(1);
    EXPECT_TRUE(std::equal(then.begin(), then.begin() + static_cast<std::ptrdiff_t>(scale_and_shift), now.begin()))
        << n.name;
    if (n.op == OpKind::BatchNorm2d) {
      EXPECT_FALSE(std::equal(then.begin(), then.end(), now.begin())) << "the running statistics moved";
    }
  }
  EXPECT_EQ(fixed, 4) << "instance, group, batch and layer norm";
  EXPECT_TRUE(trained);
  const Graph back = graph_from_json(graph_to_json(g), "round trip");
  for (std::size_t v = 0; v < g.size(); ++v) EXPECT_EQ(back.nodes()[v].attrs, g.nodes()[v].attrs) << g.nodes()[v].name;
}

}  // namespace
}  // namespace poet
