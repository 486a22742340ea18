// The ONNX importer's contract beyond PyTorch parity (onnx_parity_test.cpp): unsupported
// operators and hostile files are clear errors (export: onnx_export_test.cpp).
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "executor_harness.h"
#include "poet/graph/graph_json.h"
#include "poet/graph/op_table.h"
#include "poet/onnx/onnx_import.h"
#include "poet/train/imported_weights.h"
#include "poet/util/error.h"
#include "onnx_builder.h"
#include "onnx_fixture.h"

namespace poet {
namespace {

using namespace testing::onnx_builder;

TEST(OnnxImport, UnsupportedOperatorIsNamedWithTheSupportedOnes) {
  const std::string path = write_model("cos", {1, 4}, {1, 4}, [](auto& g) {
    add_node(g, "cosine_of_x", "Cos", {"x"}, "y");
  });
  const std::string message = import_error(path);
  EXPECT_NE(message.find("cosine_of_x"), std::string::npos) << message;
  EXPECT_NE(message.find("Cos"), std::string::npos) << message;
  EXPECT_NE(message.find("Conv, ConvTranspose, Div (by a constant, or of two activations), Dropout"), std::string::npos)
      << message;  // those supported
  EXPECT_NE(message.find("docs/ONNX.md"), std::string::npos) << message;
}

TEST(OnnxImport, UnsupportedAttributeIsNamed) {
  // Dilated by 2 along the rows and 1 along the columns: poet's convolution dilates both alike.
  const std::string path = write_model("dilated", {1, 3, 8, 8}, {1, 2, 4, 6}, [](auto& g) {
    add_initializer(g, "w", {2, 3, 3, 3}, 0.1f);
    add_ints_attribute(add_node(g, "dilated_conv", "Conv", {"x", "w"}, "y"), "dilations", {2, 1});
  });
  const std::string message = import_error(path);
  EXPECT_NE(message.find("dilated_conv"), std::string::npos) << message;
  EXPECT_NE(message.find("dilat"), std::string::npos) << message;
}

// Erf is imported within GELU's decomposition only; alone it is named as unsupported.
TEST(OnnxImport, ErfOutsideGeluIsNamed) {
  const std::string path = write_model("erf", {1, 4}, {1, 4}, [](auto& g) { add_node(g, "lonely_erf", "Erf", {"x"}, "y"); });
  const std::string message = import_error(path);
  EXPECT_NE(message.find("lonely_erf"), std::string::npos) << message;
  EXPECT_NE(message.find("GELU"), std::string::npos) << message;
}

// torch.nn.TransformerEncoder at opset 13: each layer norm written out as ReduceMean, Sub,
// Pow, Sqrt, Div, Mul and Add is one layer norm, with its epsilon; exported in training
// mode it keeps its dropout, and the same parameters. torchvision's ViT: the exact GELU.
TEST(OnnxImport, TransformerPatternsBecomeOneNodeEach) {
  const OnnxModel m = import_onnx(testing::onnx_fixture("tiny_transformer.onnx"), {.batch_size = 3});
  auto count = [](const Graph& g, OpKind op) {
    return std::count_if(g.nodes().begin(), g.nodes().end(), [op](const Node& n) { return n.op == op; });
  };
  EXPECT_EQ(count(m.forward, OpKind::LayerNorm), 4);
  EXPECT_EQ(count(m.forward, OpKind::Dropout), 0);
  EXPECT_EQ(m.forward.node(0).shape, (Shape{3, 5, 16}));
  const OnnxModel trained = import_onnx(testing::onnx_fixture("tiny_transformer_train.onnx"), {.batch_size = 3});
  EXPECT_EQ(count(trained.forward, OpKind::Dropout), 8) << "per layer: of the attention weights, after attention, in and after the feed-forward";
  EXPECT_EQ(trainable_parameters(trained.forward), trainable_parameters(m.forward));
  const OnnxModel vit = import_onnx(testing::onnx_fixture("tiny_vit.onnx"), {.batch_size = 2});
  EXPECT_EQ(count(vit.forward, OpKind::GELUErf), 2);
  EXPECT_EQ(count(vit.forward, OpKind::PrependTokens), 1);
  EXPECT_EQ(count(vit.forward, OpKind::AddParameter), 1);
  // The new attributes (permutations, targets, slices, scales) survive the graph's JSON.
  const Graph g = build_training_graph(vit.forward, BackwardMode::Autodiff);
  const Graph back = graph_from_json(graph_to_json(g), "round trip");
  for (std::size_t v = 0; v < g.size(); ++v) EXPECT_EQ(back.nodes()[v].attrs, g.nodes()[v].attrs) << g.nodes()[v].name;
}

// Exported in training mode (TrainingMode.TRAINING): batch norm with its training outputs
// (opset 13: the running and saved statistics, five outputs; opset 17: training_mode 1 and
// three) is the same batch norm as in eval mode, a training node, with the same parameters;
// torchvision's ViT, whose dropout is 0.0, writes dropouts of ratio 0, which drop nothing
// and are no node, while the transformer's of 0.1 stay.
TEST(OnnxImport, TrainingModeExportsImportAsEvalModeOnes) {
  auto count = [](const Graph& g, OpKind op) {
    return std::count_if(g.nodes().begin(), g.nodes().end(), [op](const Node& n) { return n.op == op; });
  };
  const OnnxModel eval = import_onnx(testing::onnx_fixture("tiny_resnet.onnx"), {.batch_size = 2});
  ASSERT_EQ(count(eval.forward, OpKind::BatchNorm2d), 6);
  for (const char* file : {"tiny_resnet_train_opset13.onnx", "tiny_resnet_train_opset17.onnx"}) {
    const OnnxModel trained = import_onnx(testing::onnx_fixture(file), {.batch_size = 2});
    EXPECT_EQ(count(trained.forward, OpKind::BatchNorm2d), 6) << file;
    EXPECT_EQ(trainable_parameters(trained.forward), trainable_parameters(eval.forward)) << file;
    EXPECT_EQ(trained.forward.fixed_memory().parameter_bytes, eval.forward.fixed_memory().parameter_bytes) << file;
  }
  const OnnxModel vit = import_onnx(testing::onnx_fixture("tiny_vit.onnx"), {.batch_size = 2});
  const OnnxModel vit_trained = import_onnx(testing::onnx_fixture("tiny_vit_train.onnx"), {.batch_size = 2});
  EXPECT_EQ(count(vit_trained.forward, OpKind::Dropout), 0) << "7 Dropout nodes of ratio 0 in the file";
  EXPECT_EQ(vit_trained.forward.size(), vit.forward.size());
  EXPECT_EQ(trainable_parameters(vit_trained.forward), trainable_parameters(vit.forward));
}

// A batch norm's momentum, in ONNX the share of the running statistics kept (torch writes
// BatchNorm2d(momentum=0.0003), MNASNet's, as 0.9997), becomes the node's, in PyTorch's
// sense: the share of a batch's statistics; without the attribute, PyTorch's 0.1.
TEST(OnnxImport, BatchNormKeepsItsMomentum) {
  const auto norm_momentum = [](const char* file) {
    const OnnxModel m = import_onnx(testing::onnx_fixture(file), {.batch_size = 2});
    const auto norm = std::find_if(m.forward.nodes().begin(), m.forward.nodes().end(),
                                   [](const Node& n) { return n.op == OpKind::BatchNorm2d; });
    EXPECT_NE(norm, m.forward.nodes().end()) << file;
    return norm == m.forward.nodes().end() ? -1.0 : norm->attrs.momentum;
  };
  EXPECT_NEAR(norm_momentum("norm_momentum.onnx"), 0.0003, 1e-7);
  EXPECT_NEAR(norm_momentum("tiny_resnet.onnx"), 0.1, 1e-7);
}

// torch.onnx.export's default (TrainingMode.EVAL) folds each batch norm into its convolution,
// whose weight it then names as a computed constant: the import says so, since the model
// trains without those batch norms (also when others, after a ReLU, stay). A weight with
// its parameter's name is no such export.
TEST(OnnxImport, ConvolutionsWithFoldedWeightsAreNoted) {
  // With a batch norm after a ReLU, which an eval-mode export keeps.
  const auto notes_with_weight = [](const std::string& weight, bool norm_after_relu = false) {
    const std::string name = "folded_" + weight.substr(0, 4) + (norm_after_relu ? "_norm" : "");
    const std::string path = write_model(name, {2, 1, 4, 4}, {2, 32}, [&](auto& g) {
      add_initializer(g, weight, {2, 1, 3, 3}, 0.1f);
      add_initializer(g, "onnx::Conv_8", {2}, 0.0f);
      add_ints_attribute(add_node(g, "conv", "Conv", {"x", weight, "onnx::Conv_8"}, "c"), "pads", {1, 1, 1, 1});
      if (norm_after_relu) {
        for (const char* p : {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"})
          add_initializer(g, p, {2}, 1.0f);
        add_node(g, "relu", "Relu", {"c"}, "r");
        add_node(g, "bn", "BatchNormalization", {"r", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"},
                 "n");
      }
      add_node(g, "flatten", "Flatten", {norm_after_relu ? "n" : "c"}, "y");
    });
    return import_onnx(path, {.batch_size = 2}).notes;
  };
  const std::vector<std::string> folded = notes_with_weight("onnx::Conv_7");
  ASSERT_EQ(folded.size(), 1u);
  EXPECT_NE(folded[0].find("1 of the convolutions of '"), std::string::npos) << folded[0];
  EXPECT_NE(folded[0].find("' read weights torch computed at export ('onnx::Conv_7')"), std::string::npos)
      << folded[0];
  EXPECT_NE(folded[0].find("training=torch.onnx.TrainingMode.PRESERVE"), std::string::npos) << folded[0];
  EXPECT_EQ(notes_with_weight("onnx::Conv_7", true).size(), 1u);
  EXPECT_TRUE(notes_with_weight("conv.weight").empty());
  EXPECT_TRUE(notes_with_weight("conv.weight", true).empty());
  EXPECT_TRUE(import_onnx(testing::onnx_fixture("tiny_resnet.onnx"), {.batch_size = 2}).notes.empty());
}

// A dropout and a ReLU of global pooling's [N, C, 1, 1] output, before the flatten (Inception
// v3's head in training mode): element-wise, of the shape ONNX gives their input, which
// poet holds as [N, C].
TEST(OnnxImport, ElementWiseNodesAfterGlobalPoolingKeepItsShape) {
  const OnnxModel m = import_onnx(testing::onnx_fixture("pooled_dropout_train.onnx"), {.batch_size = 2});
  auto count = [&](OpKind op) {
    return std::count_if(m.forward.nodes().begin(), m.forward.nodes().end(), [op](const Node& n) { return n.op == op; });
  };
  EXPECT_EQ(count(OpKind::Dropout), 1);
  EXPECT_EQ(count(OpKind::ReLU), 1);
  EXPECT_EQ(trainable_parameters(m.forward), 8 * 3 * 3 * 3 + 8 + 8 * 3 + 3);
}

// x.mean([2, 3]) (MnasNet, ShuffleNet) is global average pooling; a mean over other axes
// outside layer norm's decomposition is named as unsupported.
TEST(OnnxImport, MeanOverRowsAndColumnsIsGlobalPooling) {
  auto mean_over = [](std::vector<std::int64_t> axes, const Shape& out, const Shape& in = {1, 2, 3, 3}) {
    return write_model("mean", in, out, [axes](auto& g) {
      auto* mean = add_node(g, "mean", "ReduceMean", {"x"}, "y");
      add_ints_attribute(mean, "axes", axes);
      auto* keep = mean->add_attribute();
      keep->set_name("keepdims");
      keep->set_type(::onnx::AttributeProto::INT);
      keep->set_i(0);
    });
  };
  const OnnxModel m = import_onnx(mean_over({2, 3}, {1, 2}), {.batch_size = 2});
  EXPECT_EQ(m.forward.node(1).op, OpKind::GlobalAvgPool);
  EXPECT_EQ(m.forward.node(1).shape, (Shape{2, 2}));
  // A signal's mean over its length (x.mean(2) of [N, C, L]) is global pooling as well.
  const OnnxModel signal = import_onnx(mean_over({-1}, {1, 2}, {1, 2, 7}), {.batch_size = 2});
  EXPECT_EQ(signal.forward.node(1).op, OpKind::GlobalAvgPool);
  EXPECT_EQ(signal.forward.node(1).shape, (Shape{2, 2}));
  // A mean over the channels, or over the channels and all else (LayerNorm([C, H, W])'s).
  for (const auto& [axes, out] : {std::pair{std::vector<std::int64_t>{1}, Shape{1, 3, 3}},
                                   std::pair{std::vector<std::int64_t>{1, 2, 3}, Shape{1}}})
    EXPECT_TRUE(import_refused_with(mean_over(axes, out), "for a layer norm over several axes (LayerNorm([C, H, W])) "
                                                          "use GroupNorm(1, C)"));
}

// Zeros around an image, not for an average pool: poet's pad, whose gradient crops dY.
TEST(OnnxImport, PadOfZerosIsAnOperator) {
  const std::string path = write_model("pad", {1, 2, 3, 3}, {1, 40}, [](auto& g) {
    add_int64_initializer(g, "pads", {0, 0, 1, 0, 0, 0, 1, 1});
    add_node(g, "pad_image", "Pad", {"x", "pads"}, "padded");
    add_node(g, "features", "Flatten", {"padded"}, "y");
  });
  const OnnxModel m = import_onnx(path, {.batch_size = 3});
  EXPECT_EQ(m.forward.node(1).op, OpKind::Pad);
  EXPECT_EQ(m.forward.node(1).shape, (Shape{3, 2, 5, 4}));
}

// Split makes a slice per output; Sub of two activations adds the second negated (exact).
TEST(OnnxImport, SplitIsSlicesAndSubAnAddOfTheNegated) {
  const std::string path = write_model("split", {1, 6}, {1, 3}, [](auto& g) {
    auto* split = add_node(g, "halves", "Split", {"x"}, "first");
    split->add_output("second");
    auto* axis = split->add_attribute();
    axis->set_name("axis");
    axis->set_type(::onnx::AttributeProto::INT);
    axis->set_i(1);
    add_node(g, "difference", "Sub", {"first", "second"}, "y");
  });
  const OnnxModel m = import_onnx(path, {.batch_size = 2});
  std::vector<OpKind> ops;
  for (const Node& n : m.forward.nodes()) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<OpKind>{OpKind::Input, OpKind::Slice, OpKind::Slice, OpKind::Scale, OpKind::Add,
                                      OpKind::SoftmaxCrossEntropy}));
  EXPECT_EQ(m.forward.node(3).attrs.scale, -1.0);
  EXPECT_EQ(m.forward.node(2).attrs.begin, 3);

  // Four equal parts do not divide an axis of 6: the sizes are needed.
  const std::string uneven = write_model("split_uneven", {1, 6}, {1, 1}, [](auto& g) {
    auto* split = add_node(g, "quarters", "Split", {"x"}, "a");
    for (const char* o : {"b", "c", "d"}) split->add_output(o);
    auto* axis = split->add_attribute();
    axis->set_name("axis");
    axis->set_type(::onnx::AttributeProto::INT);
    axis->set_i(1);
    add_node(g, "first", "Identity", {"a"}, "y");
  });
  const std::string message = import_error(uneven);
  EXPECT_NE(message.find("quarters"), std::string::npos) << message;
}

void add_int_tensor(::onnx::GraphProto& g, const std::string& name, const Shape& dims,
                    const std::vector<std::int64_t>& values) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::INT64);
  for (const std::int64_t d : dims) t->add_dims(d);
  for (const std::int64_t v : values) t->add_int64_data(v);
}

void add_ints(::onnx::GraphProto& g, const std::string& name, std::int64_t value) {
  add_int_tensor(g, name, {1}, {value});
}

// x [N, 3, 4] and its first row [N, 1, 4] (a Slice along axis 1).
void first_row(::onnx::GraphProto& g) {
  add_ints(g, "zero", 0);
  add_ints(g, "one", 1);
  add_node(g, "first_row", "Slice", {"x", "zero", "one", "one"}, "row");
}

// Div of two activations is poet's div, the divisor broadcast where it has size 1; a
// dividend smaller than its divisor (broadcast the other way) is named.
TEST(OnnxImport, DivOfTwoActivationsBroadcastsTheDivisor) {
  const std::string path = write_model("div", {1, 3, 4}, {1, 12}, [](auto& g) {
    first_row(g);
    add_node(g, "positive", "Sigmoid", {"row"}, "divisor");
    add_node(g, "quotient", "Div", {"x", "divisor"}, "q");
    add_node(g, "features", "Flatten", {"q"}, "y");
  });
  const OnnxModel m = import_onnx(path, {.batch_size = 2});
  std::vector<OpKind> ops;
  for (const Node& n : m.forward.nodes()) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<OpKind>{OpKind::Input, OpKind::Slice, OpKind::Sigmoid, OpKind::Div, OpKind::Flatten,
                                      OpKind::SoftmaxCrossEntropy}));
  EXPECT_EQ(m.forward.node(2).shape, (Shape{2, 1, 4}));
  EXPECT_EQ(m.forward.node(3).shape, (Shape{2, 3, 4}));

  const std::string reversed = write_model("div_reversed", {1, 3, 4}, {1, 12}, [](auto& g) {
    first_row(g);
    add_node(g, "row_by_all", "Div", {"row", "x"}, "q");
    add_node(g, "features", "Flatten", {"q"}, "y");
  });
  const std::string message = import_error(reversed);
  EXPECT_NE(message.find("node 'row_by_all' (Div)"), std::string::npos) << message;
  EXPECT_NE(message.find("broadcast over it"), std::string::npos) << message;
}

// torch writes `x + 0.5` and `1 - x` with Constant nodes: fixed numbers, poet's scale with a
// shift, not learned tensors; an initializer added stays learned (a position embedding).
TEST(OnnxImport, AddAndSubOfAConstantScalarAreAShiftNotAParameter) {
  const std::string path = write_model("shift", {1, 4}, {1, 4}, [](auto& g) {
    auto* half = add_node(g, "half", "Constant", {}, "half");
    auto* value = half->add_attribute();
    value->set_name("value");
    value->set_type(::onnx::AttributeProto::TENSOR);
    value->mutable_t()->set_data_type(::onnx::TensorProto::FLOAT);
    value->mutable_t()->add_float_data(0.5f);
    add_node(g, "plus_half", "Add", {"x", "half"}, "a");
    add_node(g, "half_minus", "Sub", {"half", "a"}, "b");
    add_node(g, "minus_half", "Sub", {"b", "half"}, "c");
    add_initializer(g, "learned", {4}, 0.1f);
    add_node(g, "plus_learned", "Add", {"c", "learned"}, "y");
  });
  const OnnxModel m = import_onnx(path, {.batch_size = 2});
  std::vector<OpKind> ops;
  for (const Node& n : m.forward.nodes()) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<OpKind>{OpKind::Input, OpKind::Scale, OpKind::Scale, OpKind::Scale,
                                      OpKind::AddParameter, OpKind::SoftmaxCrossEntropy}));
  EXPECT_EQ(m.forward.node(1).attrs.scale, 1.0);
  EXPECT_EQ(m.forward.node(1).attrs.shift, 0.5);
  EXPECT_EQ(m.forward.node(2).attrs.scale, -1.0);
  EXPECT_EQ(m.forward.node(2).attrs.shift, 0.5);
  EXPECT_EQ(m.forward.node(3).attrs.shift, -0.5);
  EXPECT_EQ(trainable_parameters(m.forward), 4) << "the initializer alone";
  const Graph back = graph_from_json(graph_to_json(m.forward), "round trip");
  EXPECT_EQ(back.node(2).attrs, m.forward.node(2).attrs);
}

// x [N, 16] reshaped to [N] + the constant `sizes` (a target computed from x's shape, as
// torch writes one), then flattened to the output y. Reads the initializer "zero".
void reshape_by_batch_and(::onnx::GraphProto& g, const std::string& sizes) {
  add_node(g, "shape", "Shape", {"x"}, "shape");
  add_node(g, "batch", "Gather", {"shape", "zero"}, "batch");
  auto* concat = add_node(g, "target", "Concat", {"batch", sizes}, "target");
  auto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(::onnx::AttributeProto::INT);
  axis->set_i(0);
  add_node(g, "square", "Reshape", {"x", "target"}, "r");
  add_node(g, "features", "Flatten", {"r"}, "y");
}

// A file exported for a fixed batch bakes it into literal reshape targets, and not always as
// their first dimension: a sequence-first attention's [tokens x batch, features]. Imported
// for that batch, the literals hold as they are; for another, the error says which batch the
// file fixes and what to do.
TEST(OnnxImport, LiteralReshapesHoldAtTheBatchTheFileWasExportedFor) {
  const std::string path = write_model("fixed_batch", {2, 4, 6}, {2, 24}, [](auto& g) {
    add_int_tensor(g, "rows", {2}, {8, 6});
    add_int_tensor(g, "back", {2}, {2, 24});
    add_node(g, "tokens_by_batch", "Reshape", {"x", "rows"}, "r");
    add_node(g, "per_sample", "Reshape", {"r", "back"}, "y");
  });
  const OnnxModel m = import_onnx(path, {.batch_size = 2});
  EXPECT_EQ(m.forward.node(1).shape, (Shape{8, 6}));
  EXPECT_EQ(m.forward.node(m.forward.loss()).shape, (Shape{2, 24}));
  try {
    import_onnx(path, {.batch_size = 3});
    ADD_FAILURE() << "imported at batch 3";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("exported for batch 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--batch-size 2"), std::string::npos) << e.what();
  }
}

// Expand and Mod of constants are folded (torch expands shape computations' tensors, Swin
// its masks; Swin's padding is a Mod of sizes): here -12 mod 16 = 4 (the divisor's sign, as
// torch's remainder), repeated to [4, 4] in a reshape's target computed from the input's shape.
TEST(OnnxImport, ExpandAndModOfConstantsAreFolded) {
  const std::string path = write_model("expand", {1, 16}, {1, 16}, [](auto& g) {
    add_ints(g, "zero", 0);
    add_ints(g, "minus_twelve", -12);
    add_ints(g, "sixteen", 16);
    add_ints(g, "two", 2);
    add_node(g, "four", "Mod", {"minus_twelve", "sixteen"}, "four");
    add_node(g, "fours", "Expand", {"four", "two"}, "fours");
    reshape_by_batch_and(g, "fours");
  });
  const OnnxModel m = import_onnx(path, {.batch_size = 2});
  EXPECT_EQ(m.forward.node(1).op, OpKind::Reshape);
  EXPECT_EQ(m.forward.node(1).shape, (Shape{2, 4, 4}));
  EXPECT_EQ(m.folded_nodes, 5);
}

// Equal and Where of constant tensors fold, broadcast as numpy does (Swin computes its
// masks so): Where(eye == 1, 4, [[4], [9]]) = [[4, 4], [9, 4]], whose first two values,
// after the batch, are a reshape's target.
TEST(OnnxImport, EqualAndWhereOfConstantTensorsAreFoldedBroadcast) {
  const std::string path = write_model("where", {1, 16}, {1, 16}, [](auto& g) {
    add_ints(g, "zero", 0);
    add_ints(g, "one", 1);
    add_ints(g, "two", 2);
    add_ints(g, "four", 4);
    add_ints(g, "flat", -1);
    add_int_tensor(g, "eye", {2, 2}, {1, 0, 0, 1});
    add_int_tensor(g, "column", {2, 1}, {4, 9});
    add_node(g, "diagonal", "Equal", {"eye", "one"}, "diagonal");
    add_node(g, "choose", "Where", {"diagonal", "four", "column"}, "chosen");
    add_node(g, "flatten_chosen", "Reshape", {"chosen", "flat"}, "values");
    add_node(g, "first_two", "Slice", {"values", "zero", "two"}, "sizes");
    reshape_by_batch_and(g, "sizes");
  });
  const OnnxModel m = import_onnx(path, {.batch_size = 2});
  EXPECT_EQ(m.forward.node(1).shape, (Shape{2, 4, 4}));

  // Shapes that do not broadcast: an error naming the node (ONNX's shape inference finds it
  // before the folding would).
  const std::string bad = write_model("where_bad", {1, 16}, {1, 16}, [](auto& g) {
    add_int_tensor(g, "eye", {2, 2}, {1, 0, 0, 1});
    add_int_tensor(g, "three", {3}, {1, 2, 3});
    add_node(g, "mismatch", "Equal", {"eye", "three"}, "e");
    add_node(g, "features", "Identity", {"x"}, "y");
  });
  const std::string message = import_error(bad);
  EXPECT_NE(message.find("mismatch"), std::string::npos) << message;
  EXPECT_NE(message.find("Equal"), std::string::npos) << message;
}

// Einsum that is a batched matrix product becomes poet's matmul between transposes
// (tiny_einsum holds it to PyTorch); any other equation stops the import naming the node
// and the equation.
TEST(OnnxImport, EinsumOtherThanABatchedMatrixProductIsNamed) {
  auto einsum = [](const std::string& name, const std::string& equation, const Shape& out) {
    return write_model(name, {1, 3, 4}, out, [&](auto& g) {
      auto* e = add_node(g, "scores", "Einsum", {"x", "x"}, "s");
      auto* a = e->add_attribute();
      a->set_name("equation");
      a->set_type(::onnx::AttributeProto::STRING);
      a->set_s(equation);
      add_node(g, "features", "Flatten", {"s"}, "y");
    });
  };
  const OnnxModel m = import_onnx(einsum("einsum_product", "bik,bjk->bji", {1, 9}), {.batch_size = 2});
  std::vector<OpKind> ops;
  for (const Node& n : m.forward.nodes()) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<OpKind>{OpKind::Input, OpKind::Transpose, OpKind::MatMul, OpKind::Transpose,
                                      OpKind::Flatten, OpKind::SoftmaxCrossEntropy}));
  for (const auto& [equation, why] : {std::pair{"bij,bij->bj", "contracts 1 axes with 0 and 0 free ones"},
                                      std::pair{"bii,bij->bj", "repeats within one term"},
                                      std::pair{"bij,bkj->bk", "of the first operand is summed alone"},
                                      std::pair{"...ij,...kj->...ik", "explicit output"}}) {
    const std::string message = import_error(einsum("einsum_bad", equation, {1, 4}));
    EXPECT_NE(message.find("'scores' (Einsum)"), std::string::npos) << message;
    EXPECT_NE(message.find(why), std::string::npos) << message;
  }
}

// A tensor the file computes from constants (Swin's mask: Range, Unsqueeze, Sub broadcast,
// Transpose, a Slice by a step, Cast) is added as a fixed tensor, not learned; a learned
// table gathered by constant indices (a relative position bias) is added as the table,
// learned, the indices fixed.
TEST(OnnxImport, ComputedConstantsAreFixedAndAGatheredTableIsLearned) {
  const std::string path = write_model("computed", {1, 3, 3}, {1, 9}, [](auto& g) {
    add_ints(g, "zero", 0);
    add_ints(g, "one", 1);
    add_ints(g, "six", 6);
    add_ints(g, "two", 2);
    add_int_tensor(g, "r0", {}, {0});
    add_int_tensor(g, "r6", {}, {6});
    add_int_tensor(g, "r1", {}, {1});
    add_node(g, "range", "Range", {"r0", "r6", "r1"}, "r");                 // 0 1 2 3 4 5
    add_node(g, "evens", "Slice", {"r", "zero", "six", "zero", "two"}, "e");  // 0 2 4
    add_node(g, "column", "Unsqueeze", {"e", "one"}, "c");
    add_node(g, "row", "Unsqueeze", {"e", "zero"}, "w");
    add_node(g, "differences", "Sub", {"c", "w"}, "d");  // [3, 3]: i - j
    add_node(g, "transposed", "Transpose", {"d"}, "t");
    auto* cast = add_node(g, "as_float", "Cast", {"t"}, "mask");
    auto* to = cast->add_attribute();
    to->set_name("to");
    to->set_type(::onnx::AttributeProto::INT);
    to->set_i(::onnx::TensorProto::FLOAT);
    add_node(g, "masked", "Add", {"x", "mask"}, "m");
    add_initializer(g, "table", {5}, 0.5f);
    add_int_tensor(g, "index", {3, 3}, {4, 0, 1, 2, 3, 4, 0, 0, 1});
    add_node(g, "bias", "Gather", {"table", "index"}, "b");
    add_node(g, "biased", "Add", {"m", "b"}, "s");
    add_node(g, "features", "Flatten", {"s"}, "y");
  });
  const OnnxModel m = import_onnx(path, {.batch_size = 2});
  const Node& mask = m.forward.node(1);
  EXPECT_EQ(mask.op, OpKind::AddConstant);
  EXPECT_EQ(mask.param_count, 9);
  EXPECT_EQ(trainable_parameters(mask), 0);
  EXPECT_EQ(m.parameters.at(0).values, (std::vector<float>{0, 2, 4, -2, 0, 2, -4, -2, 0}));  // (j - i) * 2
  const Node& bias = m.forward.node(2);
  EXPECT_EQ(bias.op, OpKind::AddGathered);
  EXPECT_EQ(trainable_parameters(bias), 5);
  EXPECT_EQ(bias.param_count, 5 + 9);
  EXPECT_EQ(m.parameters.at(1).pieces.at(0).initializer, "table");
  EXPECT_TRUE(m.parameters.at(1).pieces.at(1).initializer.empty());  // the indices: fixed, not written back
  EXPECT_EQ(m.parameters.at(1).values.back(), 1.0f);
  EXPECT_EQ(trainable_parameters(m.forward), 5);
  // Export writes the table back and leaves the fixed tensors as the file computes them.
  const std::string out = temp_path("computed_out.onnx");
  export_onnx(m, out);
  EXPECT_EQ(trainable_parameters(import_onnx(out, {.batch_size = 2}).forward), 5);
}

// An integer input is token ids: imported when embeddings alone read it (the tiny BERT's
// nn.Embedding, a Gather of its table's rows), and named with the node that reads it
// otherwise.
TEST(OnnxImport, IntegerInputIsTokenIdsOfEmbeddings) {
  const OnnxModel bert = import_onnx(testing::onnx_fixture("tiny_bert.onnx"), {.batch_size = 3});
  EXPECT_EQ(bert.forward.node(0).shape, (Shape{3, 6}));
  EXPECT_EQ(bert.forward.node(1).op, OpKind::Embedding);
  EXPECT_EQ(bert.forward.node(1).shape, (Shape{3, 6, 16}));
  EXPECT_EQ(bert.forward.node(1).param_count, 20 * 16);
  EXPECT_EQ(token_vocabulary(bert.forward), 20);

  const std::string path = write_model("int_input", {1, 4}, {1, 4}, [](auto& g) {
    g.mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
    add_node(g, "as_floats", "Cast", {"x"}, "y")->add_attribute()->set_name("to");
    auto* to = g.mutable_node(0)->mutable_attribute(0);
    to->set_type(::onnx::AttributeProto::INT);
    to->set_i(::onnx::TensorProto::FLOAT);
  });
  const std::string message = import_error(path);
  EXPECT_NE(message.find("input 'x' holds integers, and node 'as_floats' (Cast) reads it"), std::string::npos)
      << message;
}

// nn.TransformerEncoder with batch_first=False takes [seq, batch, dim]. Exported with the
// sequence axis named the batch, its logits' rows stay the file's batch (2): refused for
// any batch asked for, 2 included (which only a second import with another batch tells).
TEST(OnnxImport, SequenceFirstTransformerIsRefusedNamingBatchFirst) {
  for (const int batch : {1, 2, 3}) {
    try {
      import_onnx(testing::onnx_fixture("tiny_transformer_seq_first.onnx"), {.batch_size = batch});
      ADD_FAILURE() << "a sequence-first encoder imported with batch " << batch;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("export it with batch_first=True"), std::string::npos) << e.what();
    }
  }
  // Exported with its batch axis named: the input varies along axis 1.
  const std::string message = import_error(testing::onnx_fixture("tiny_transformer_seq_first_batch_axis_1.onnx"));
  EXPECT_NE(message.find("batch_first=True"), std::string::npos) << message;
}

TEST(OnnxImport, HostileFilesAreClearErrors) {
  const std::string garbage = temp_path("garbage.onnx");
  write_bytes(garbage, "this is not an ONNX model, only some text\n");
  EXPECT_NE(import_error(garbage).find(garbage), std::string::npos);

  const std::string empty = temp_path("empty.onnx");
  write_bytes(empty, "");
  EXPECT_NE(import_error(empty).find("not an ONNX model"), std::string::npos);

  EXPECT_NE(import_error(temp_path("does-not-exist.onnx")).find("cannot read ONNX file"), std::string::npos);
  EXPECT_NE(import_error(std::filesystem::temp_directory_path().string()).find("it is a folder"),
            std::string::npos);

  const std::string whole = read_bytes(testing::onnx_fixture("tiny_resnet.onnx"));
  for (const std::size_t keep : {std::size_t{10}, whole.size() / 3, whole.size() / 2, whole.size() - 7}) {
    const std::string truncated = temp_path("truncated.onnx");
    write_bytes(truncated, whole.substr(0, keep));
    import_error(truncated);
  }

  const std::string missing = write_model("missing", {1, 4}, {1, 4}, [](auto& g) {
    add_node(g, "reads_nothing", "Relu", {"nowhere"}, "y");
  });
  import_error(missing);

  // A convolution whose weight has 5 input channels, on a 3-channel image.
  const std::string wrong = write_model("wrong_shapes", {1, 3, 8, 8}, {1, 2, 6, 6}, [](auto& g) {
    add_initializer(g, "w", {2, 5, 3, 3}, 0.1f);
    add_node(g, "bad_conv", "Conv", {"x", "w"}, "y");
  });
  import_error(wrong);

  // Weights whose data do not match their dimensions.
  const std::string short_weights = write_model("short_weights", {1, 4}, {1, 3}, [](auto& g) {
    add_initializer(g, "w", {3, 4}, 0.1f);
    g.mutable_initializer(0)->mutable_float_data()->RemoveLast();
    auto* gemm = add_node(g, "fc", "Gemm", {"x", "w"}, "y");
    auto* t = gemm->add_attribute();
    t->set_name("transB");
    t->set_type(::onnx::AttributeProto::INT);
    t->set_i(1);
  });
  import_error(short_weights);
}

// tiny_cnn with every initializer's data moved to one file beside the model, as
// onnx.save_model(..., save_as_external_data=True) and torch.onnx.export (over 2 GB) write
// it: the import is the one of the file with its data inside. `spoil` may damage the
// description of the first initializer's data.
std::string external_data_model(const std::string& name,
                                const std::function<void(::onnx::TensorProto&)>& spoil = nullptr) {
  ::onnx::ModelProto m;
  std::ifstream in(testing::onnx_fixture("tiny_cnn.onnx"), std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&in));
  const std::filesystem::path folder = temp_path(name);
  std::filesystem::create_directories(folder);
  std::string data;
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    EXPECT_TRUE(t.has_raw_data()) << t.name();
    const auto entry = [&t](const std::string& key, const std::string& value) {
      auto* e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    entry("location", "weights.bin");
    entry("offset", std::to_string(data.size()));
    entry("length", std::to_string(t.raw_data().size()));
    data += t.raw_data();
    data.resize((data.size() + 63) / 64 * 64, '\0');  // aligned, as ONNX's writer does
    t.clear_raw_data();
    t.set_data_location(::onnx::TensorProto::EXTERNAL);
  }
  if (spoil) spoil(*m.mutable_graph()->mutable_initializer(0));
  write_bytes((folder / "weights.bin").string(), data);
  const std::string path = (folder / "tiny_cnn.onnx").string();  // the graph is named after the file
  std::ofstream out(path, std::ios::binary);
  EXPECT_TRUE(m.SerializeToOstream(&out));
  return path;
}

TEST(OnnxImport, WeightsInAnExternalDataFileAreReadAsIfInside) {
  const OnnxModel inside = import_onnx(testing::onnx_fixture("tiny_cnn.onnx"), {.batch_size = 2});
  const OnnxModel outside = import_onnx(external_data_model("external"), {.batch_size = 2});
  EXPECT_EQ(graph_to_json(outside.forward), graph_to_json(inside.forward));
  ASSERT_EQ(outside.parameters.size(), inside.parameters.size());
  for (std::size_t i = 0; i < inside.parameters.size(); ++i)
    EXPECT_EQ(outside.parameters[i].values, inside.parameters[i].values) << inside.parameters[i].node;
  // The data file, once, for the commands to keep their outputs off it.
  const std::string model = external_data_model("listed");
  EXPECT_EQ(onnx_external_data_files(model),
            std::vector<std::string>{(std::filesystem::path(model).parent_path() / "weights.bin").string()});
  EXPECT_TRUE(onnx_external_data_files(testing::onnx_fixture("tiny_cnn.onnx")).empty());
}

TEST(OnnxImport, ExternalDataOutsideTheFolderMissingOrCutShortIsNamed) {
  const auto location = [](const std::string& where) {
    return [where](::onnx::TensorProto& t) { t.mutable_external_data(0)->set_value(where); };
  };
  for (const char* outside : {"../weights.bin", "/etc/passwd", ""})
    EXPECT_NE(import_error(external_data_model("escape", location(outside))).find("not a file inside the model's folder"),
              std::string::npos)
        << outside;
  EXPECT_NE(import_error(external_data_model("missing", location("gone.bin"))).find("which cannot be read"),
            std::string::npos);
  const auto offset = [](::onnx::TensorProto& t) { t.mutable_external_data(1)->set_value("1000000"); };
  EXPECT_NE(import_error(external_data_model("beyond", offset)).find("the data file is cut short"), std::string::npos);
  const auto length = [](::onnx::TensorProto& t) { t.mutable_external_data(2)->set_value("3"); };
  EXPECT_NE(import_error(external_data_model("length", length)).find("but its dimensions need"), std::string::npos);
  const auto garbage = [](::onnx::TensorProto& t) { t.mutable_external_data(1)->set_value("-1x"); };
  EXPECT_NE(import_error(external_data_model("garbage", garbage)).find("not a byte count"), std::string::npos);
}

// ONNX's own shape inference divides by a stride unchecked: a stride of 0 stopped the
// process (SIGFPE), found by the fuzzer. Each such attribute is an error naming the node, at
// the top level and inside a branch of an If.
TEST(OnnxImport, ZeroStridesAndNegativePadsAreErrorsNotACrash) {
  const std::pair<std::string, std::vector<std::int64_t>> bad[] = {
      {"strides", {0, 0}}, {"dilations", {1, 0}}, {"kernel_shape", {0, 3}}, {"pads", {0, 0, -1, 0}}};
  for (const auto& entry : bad) {
    const std::string& attribute = entry.first;  // named, not bound: clang 14's lambdas cannot capture a binding
    const std::vector<std::int64_t>& values = entry.second;
    const std::string path = write_model("zero_" + attribute, {1, 3, 8, 8}, {1, 2, 6, 6}, [&](auto& g) {
      add_initializer(g, "w", {2, 3, 3, 3}, 0.1f);
      add_ints_attribute(add_node(g, "strided_conv", "Conv", {"x", "w"}, "y"), attribute, values);
    });
    const std::string message = import_error(path);
    EXPECT_NE(message.find("strided_conv"), std::string::npos) << message;
    EXPECT_NE(message.find(attribute), std::string::npos) << message;
  }
  const std::string pool = write_model("zero_pool", {1, 3, 8, 8}, {1, 3, 4, 4}, [&](auto& g) {
    auto* n = add_node(g, "pool", "MaxPool", {"x"}, "y");
    add_ints_attribute(n, "kernel_shape", {2, 2});
    add_ints_attribute(n, "strides", {0, 2});
  });
  EXPECT_NE(import_error(pool).find("'pool' (MaxPool) has strides 0"), std::string::npos);
  const std::string branch = write_model("zero_branch", {1, 3, 8, 8}, {1, 3, 4, 4}, [&](auto& g) {
    auto* n = add_node(g, "choose", "If", {"x"}, "y");
    auto* then_branch = n->add_attribute();
    then_branch->set_name("then_branch");
    then_branch->set_type(::onnx::AttributeProto::GRAPH);
    auto* pool_node = add_node(*then_branch->mutable_g(), "inner_pool", "AveragePool", {"x"}, "z");
    add_ints_attribute(pool_node, "kernel_shape", {2, 2});
    add_ints_attribute(pool_node, "strides", {2, 0});
  });
  EXPECT_NE(import_error(branch).find("inner_pool"), std::string::npos);
}

// TensorFlow's exporters pad a convolution unevenly in the Conv itself (SAME at an even
// size): the layer pads both sides by the smaller amount, and a Pad before it adds the rest.
// Held to PyTorch by the tiny_tf_padding fixture; here the shapes, SAME_LOWER, and what is
// refused (a pooling padded unevenly, a transposed convolution's SAME, an unknown auto_pad).
TEST(OnnxImport, UnevenConvolutionPaddingBecomesAPadBeforeTheLayer) {
  const auto conv_model = [](const std::string& name, const std::string& op, std::int64_t features,
                             const std::function<void(::onnx::NodeProto*)>& attributes) {
    return write_model(name, {1, 3, 8, 8}, {1, features}, [&](auto& g) {
      add_initializer(g, "w", {op == "Conv" ? 2 : 3, op == "Conv" ? 3 : 2, 3, 3}, 0.1f);
      auto* n = add_node(g, "uneven", op, {"x", "w"}, "c");
      add_ints_attribute(n, "strides", {2, 2});
      attributes(n);
      add_node(g, "features", "Flatten", {"c"}, "y");
    });
  };
  const OnnxModel lower = import_onnx(
      conv_model("same_lower", "Conv", 32, [](auto* n) { add_string_attribute(n, "auto_pad", "SAME_LOWER"); }),
      {.batch_size = 2});
  ASSERT_EQ(lower.forward.node(1).op, OpKind::Pad);
  EXPECT_EQ(lower.forward.node(1).attrs.dims, (std::vector<std::int64_t>{0, 0, 1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(lower.forward.node(2).op, OpKind::Conv2d);
  EXPECT_EQ(lower.forward.node(2).attrs.pad_h, 0);
  EXPECT_EQ(lower.forward.node(2).shape, (Shape{2, 2, 4, 4}));
  const OnnxModel explicit_pads = import_onnx(
      conv_model("explicit_uneven", "Conv", 40, [](auto* n) { add_ints_attribute(n, "pads", {1, 0, 2, 1}); }),
      {.batch_size = 2});
  EXPECT_EQ(explicit_pads.forward.node(1).attrs.dims, (std::vector<std::int64_t>{0, 0, 0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(explicit_pads.forward.node(2).attrs.pad_h, 1);
  EXPECT_EQ(explicit_pads.forward.node(2).attrs.pad_w, 0);
  EXPECT_EQ(explicit_pads.forward.node(2).shape, (Shape{2, 2, 5, 4}));

  EXPECT_TRUE(import_refused_with(
      conv_model("same_transposed", "ConvTranspose", 2 * 16 * 16,
                 [](auto* n) { add_string_attribute(n, "auto_pad", "SAME_UPPER"); }),
      "takes explicit pads, not auto_pad SAME"));
  EXPECT_TRUE(import_refused_with(
      conv_model("bad_auto_pad", "Conv", 18, [](auto* n) { add_string_attribute(n, "auto_pad", "SAME_MIDDLE"); }),
      "auto_pad SAME_MIDDLE is not an ONNX padding"));
  // A max pool padded more at the end is ceil_mode's (its padding holds no maximum); padded
  // more at the beginning, or an average pool, it is refused.
  const auto pool_model = [](const std::string& name, const std::string& op, const std::vector<std::int64_t>& pads) {
    return write_model(name, {1, 3, 8, 8}, {1, 48}, [&](auto& g) {
      auto* n = add_node(g, "pool", op, {"x"}, "p");
      add_ints_attribute(n, "kernel_shape", {3, 3});
      add_ints_attribute(n, "strides", {2, 2});
      add_ints_attribute(n, "pads", pads);
      add_node(g, "features", "Flatten", {"p"}, "y");
    });
  };
  const OnnxModel same = import_onnx(pool_model("same_pool", "MaxPool", {0, 0, 1, 1}), {.batch_size = 2});
  EXPECT_TRUE(same.forward.node(1).attrs.ceil_mode);
  EXPECT_EQ(same.forward.node(1).attrs.pad_h, 0);
  EXPECT_EQ(same.forward.node(1).shape, (Shape{2, 3, 4, 4}));
  EXPECT_TRUE(import_refused_with(pool_model("early_pool", "MaxPool", {1, 1, 0, 0}),
                                  "poet's pooling pads both sides of an axis alike"));
  EXPECT_TRUE(import_refused_with(pool_model("uneven_average", "AveragePool", {0, 0, 1, 1}),
                                  "poet's pooling pads both sides of an axis alike"));
}

TEST(OnnxImport, BatchSizeSetsTheInputsFirstDimension) {
  const OnnxModel m = import_onnx(testing::onnx_fixture("tiny_cnn.onnx"), {.batch_size = 5});
  EXPECT_EQ(m.forward.node(0).shape, (Shape{5, 3, 16, 16}));
  EXPECT_EQ(m.forward.node(m.forward.loss()).shape, (Shape{5, 5}));
  EXPECT_TRUE(m.has_weights);
}

// torchvision's Inception and MobileNetV3 normalize with epsilon 1e-3 (the tiny ResNet's
// first batch norm does too): the norm and its statistics node keep it, and so does the
// graph's JSON.
TEST(OnnxImport, NormEpsilonIsKeptThroughTheTrainingGraphAndItsJson) {
  const OnnxModel m = import_onnx(testing::onnx_fixture("tiny_resnet.onnx"), {.batch_size = 2});
  const Graph g = build_training_graph(m.forward, BackwardMode::Autodiff);
  int loose = 0;
  for (const Node& n : g.nodes())
    if (n.role != Role::Backward && (n.op == OpKind::BatchNorm2d || n.op == OpKind::BatchNormStats) &&
        std::abs(n.attrs.epsilon - 1e-3) < 1e-9)
      ++loose;
  EXPECT_EQ(loose, 2) << "the first batch norm and its statistics";
  const Graph back = graph_from_json(graph_to_json(g), "round trip");
  for (std::size_t v = 0; v < g.size(); ++v) EXPECT_EQ(back.nodes()[v].attrs, g.nodes()[v].attrs) << g.nodes()[v].name;
}

}  // namespace
}  // namespace poet
