// Small hostile ONNX files: each is refused with the node and the reason, never a crash or
// gigabytes of memory for a file of a few hundred bytes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnx_builder.h"
#include "poet/train/trainer.h"

namespace poet {
namespace {

using namespace testing::onnx_builder;

// ConstantOfShape held each dimension to 2^20 but not their product: [65536]^4 is 2^64
// elements, 0 once wrapped, and the Slice after it read past the end (a segfault); [30000,
// 30000] took 3.5 GB before failing. Folded constants are held to 2^24 elements.
TEST(OnnxHostile, AConstantOfShapeBeyondWhatPoetFoldsIsNamed) {
  for (const std::vector<std::int64_t>& dims : {std::vector<std::int64_t>{65536, 65536, 65536, 65536},
                                                std::vector<std::int64_t>{30000, 30000}}) {
    const std::vector<std::int64_t> zeros(dims.size(), 0), ones(dims.size(), 1);
    const std::string path = write_model("constant_of_shape", {1, 4}, {1, 4}, [&](auto& g) {
      add_int64_initializer(g, "shape", dims);
      add_int64_initializer(g, "starts", zeros);
      add_int64_initializer(g, "ends", ones);
      add_int64_initializer(g, "one", {1});
      add_node(g, "sevens", "ConstantOfShape", {"shape"}, "c");
      add_node(g, "corner", "Slice", {"c", "starts", "ends"}, "corner");
      add_node(g, "flat", "Reshape", {"corner", "one"}, "seven");
      add_node(g, "plus_seven", "Add", {"x", "seven"}, "y");
    });
    const std::string message = import_error(path);
    EXPECT_NE(message.find("'sevens'"), std::string::npos) << message;
    EXPECT_NE(message.find("more than 2^24 elements"), std::string::npos) << message;
  }
}

// ONNX's checker calls a missing input "Nodes in a graph must be topologically sorted",
// with literal "\n"s: the input is named as what it is, missing or made later.
TEST(OnnxHostile, AnInputNoNodeMakesIsNamedAsMissingOrMadeLater) {
  const std::string missing = write_model("missing", {1, 4}, {1, 4}, [](auto& g) {
    add_node(g, "mm", "MatMul", {"x", "W"}, "y");
  });
  EXPECT_TRUE(import_refused_with(missing, "node 'mm' (MatMul) reads 'W', which is defined nowhere (no graph "
                                           "input, initializer or node makes it)"));
  const std::string cycle = write_model("cycle", {1, 4}, {1, 4}, [](auto& g) {
    add_node(g, "first", "Add", {"x", "b"}, "a");
    add_node(g, "second", "Relu", {"a"}, "b");
    add_node(g, "out", "Relu", {"b"}, "y");
  });
  EXPECT_TRUE(import_refused_with(cycle, "node 'first' (Add) reads 'b', which node 'second' makes after it: the "
                                         "nodes are out of order or in a cycle"));
}

// A layer used twice (a module called twice: one initializer read by both MatMuls) was
// trained as two copies, and the export kept the second's: PyTorch sums the two gradients.
TEST(OnnxHostile, AWeightTwoLayersShareIsRefused) {
  const std::string shared = write_model("shared", {1, 4}, {1, 4}, [](auto& g) {
    add_initializer(g, "W", {4, 4}, 0.1f);
    add_node(g, "first", "MatMul", {"x", "W"}, "h");
    add_node(g, "act", "Relu", {"h"}, "a");
    add_node(g, "second", "MatMul", {"a", "W"}, "y");
  });
  EXPECT_TRUE(import_refused_with(shared, "node 'second' (MatMul): its weight 'W' is also the weight of node "
                                          "'first': the model uses one layer in two places (shared weights)"));
}

// Refusals that named the wrong thing: an operator poet has not, for its second output (a user
// who then read only the first was refused again); a log-softmax output as an unknown
// operator; two outputs without their names or what to do.
TEST(OnnxHostile, RefusalsNameTheOperatorTheOutputsAndTheFix) {
  const std::string topk = write_model("topk", {1, 4}, {1, 2}, [](auto& g) {
    add_int64_initializer(g, "k", {2});
    auto* n = add_node(g, "top", "TopK", {"x", "k"}, "values");
    n->add_output("indices");
    add_int_attribute(add_node(g, "cast", "Cast", {"indices"}, "y"), "to", ::onnx::TensorProto::FLOAT);
  });
  EXPECT_TRUE(import_refused_with(topk, "poet has no operator for ONNX's TopK"));
  const std::string flipped = write_model("flipped_leaky", {1, 4}, {1, 4}, [](auto& g) {
    add_float_attribute(add_node(g, "leaky", "LeakyRelu", {"x"}, "y"), "alpha", -0.5f);
  });
  EXPECT_TRUE(
      import_refused_with(flipped, "its negative slope (alpha) is -0.5; poet's leaky ReLU takes a positive one"));
  const std::string flat_elu = write_model("flat_elu", {1, 4}, {1, 4}, [](auto& g) {
    add_float_attribute(add_node(g, "elu", "Elu", {"x"}, "y"), "alpha", 0.0f);
  });
  EXPECT_TRUE(import_refused_with(flat_elu, "its alpha is 0; poet's ELU takes a positive one (0: use Relu)"));
  const std::string log_softmax = write_model("log_softmax", {1, 4}, {1, 4}, [](auto& g) {
    add_node(g, "ls", "LogSoftmax", {"x"}, "y");
  });
  EXPECT_TRUE(
      import_refused_with(log_softmax, "the model's output is a log-softmax, and poet's loss takes the logits"));
  const std::string two = write_model("two_outputs", {1, 4}, {1, 4}, [](auto& g) {
    add_node(g, "main", "Relu", {"x"}, "y");
    add_node(g, "aux", "Sigmoid", {"x"}, "z");
    add_value(g.add_output(), "z", {1, 4});
  });
  EXPECT_TRUE(import_refused_with(two, "has 2 outputs ('y', 'z'); poet trains a model with one output, the logits: "
                                       "export a wrapper whose forward returns the logits alone"));
}

// A BatchNorm1d at batch 1 trained without a word, its output a constant; PyTorch refuses it.
TEST(OnnxHostile, ABatchNormOfOneValueAChannelIsRefusedForTraining) {
  const std::string path = write_model("bn1d", {1, 4}, {1, 4}, [](auto& g) {
    for (const char* name : {"scale", "bias", "mean", "var"}) add_initializer(g, name, {4}, 1.0f);
    add_node(g, "bn", "BatchNormalization", {"x", "scale", "bias", "mean", "var"}, "y");
  });
  try {
    train::check_batch_statistics(import_onnx(path, {.batch_size = 1}).forward);
    ADD_FAILURE() << "batch 1 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("batch norm 'bn' normalises 1 value a channel at this batch size (1x4)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(train::check_batch_statistics(import_onnx(path, {.batch_size = 2}).forward));
}

// torch.onnx.export without dynamic axes writes x.view(x.size(0), -1) with the export's
// batch as a constant: at another --batch-size the error says so, and what to do.
TEST(OnnxHostile, ABatchFixedAtExportIsNamedWithTheFix) {
  const auto reshaped_to = [](const std::string& name, std::vector<std::int64_t> target) {
    return write_model(name, {1, 2, 4}, {1, 8}, [&](auto& g) {
      add_int64_initializer(g, "target", target);
      add_node(g, "flatten", "Reshape", {"x", "target"}, "y");
    });
  };
  // A whole target shape: ONNX keeps the export's batch, poet makes --batch-size's.
  const std::string whole = import_error(reshaped_to("fixed_whole", {1, 8}));
  EXPECT_NE(whole.find("node 'flatten' (Reshape): ONNX makes 1x8 of it where poet makes 2x8 for --batch-size 2: the "
                       "file was exported with a fixed batch of 1"),
            std::string::npos)
      << whole;
  // A batch and -1: ONNX folds the rows into the columns, which its shape inference finds
  // against the output's shape.
  const std::string folded = import_error(reshaped_to("fixed_rows", {1, -1}));
  EXPECT_NE(folded.find("(the file was exported for batch 1: a batch fixed at export, as x.view(x.size(0), -1) makes "
                        "it, fails at another; give --batch-size 1, or export with dynamic_axes"),
            std::string::npos)
      << folded;
}

// torch.onnx.export(..., export_params=False) makes the weights graph inputs: the error
// says so, and how to export.
TEST(OnnxHostile, WeightsGivenAsInputsAreNamedWithTheExportOption) {
  const std::string path = write_model("weights_as_inputs", {1, 4}, {1, 3}, [](auto& g) {
    add_value(g.add_input(), "fc.weight", {4, 3});
    add_node(g, "fc", "MatMul", {"x", "fc.weight"}, "y");
  });
  EXPECT_TRUE(import_refused_with(path, "has several inputs ('x', 'fc.weight'); poet trains models with one input, "
                                        "the batch of samples: if the others are the model's weights"));
}

// A Resize poet cannot compute (as blocks of copies, or bilinearly at pixel centres) is named
// with what it takes instead.
TEST(OnnxHostile, AResizeOtherThanNearestOrBilinearByWholeFactorsIsNamed) {
  const auto resize = [](const std::string& name, const std::vector<float>& scales, const Shape& out,
                         const std::vector<std::pair<std::string, std::string>>& attributes) {
    return write_model(name, {1, 2, 4, 4}, out, [&](auto& g) {
      add_floats_initializer(g, "scales", scales);
      auto* n = add_node(g, "up", "Resize", {"x", "", "scales"}, "y");
      for (const auto& [key, value] : attributes) add_string_attribute(n, key, value);
    });
  };
  // The reason and its fix alone: Resize is an operator poet imports, so the list of them is left out.
  const std::string cubic = import_error(resize("cubic", {1, 1, 2, 2}, {1, 2, 8, 8}, {{"mode", "cubic"}}));
  EXPECT_TRUE(cubic.ends_with("node 'up' (Resize): mode 'cubic': poet resizes by the nearest pixel or bilinearly "
                              "(torch's modes 'nearest' and 'bilinear') (docs/ONNX.md)"))
      << cubic;
  EXPECT_TRUE(import_refused_with(resize("bilinear_corners", {1, 1, 2, 2}, {1, 2, 8, 8},
                                         {{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}}),
                                  "poet's bilinear upsampling maps pixels by their centres, as torch's "
                                  "align_corners=False ('half_pixel' or 'pytorch_half_pixel'), not "
                                  "coordinate_transformation_mode 'align_corners'; export with align_corners=False"));
  // Asymmetric, rounded up: output pixels 1 and 2 (0.5 and 1.0) both read input pixel 1, not blocks of 2.
  EXPECT_TRUE(import_refused_with(
      resize("rounded", {1, 1, 2, 2}, {1, 2, 8, 8},
             {{"coordinate_transformation_mode", "asymmetric"}, {"nearest_mode", "round_prefer_ceil"}}),
      "not coordinate_transformation_mode 'asymmetric' with nearest_mode 'round_prefer_ceil'"));
  EXPECT_TRUE(import_refused_with(resize("corners", {1, 1, 2, 2}, {1, 2, 8, 8},
                                         {{"coordinate_transformation_mode", "align_corners"}}),
                                  "coordinate_transformation_mode 'align_corners'"));
  EXPECT_TRUE(import_refused_with(resize("fraction", {1, 1, 1.5f, 1.5f}, {1, 2, 6, 6}, {}),
                                  "poet enlarges an image's rows and columns by whole factors of 1 to 1024"));
  EXPECT_TRUE(import_refused_with(resize("huge", {1, 1, 1025, 1}, {1, 2, 4100, 4}, {}), "whole factors of 1 to 1024"));
  EXPECT_TRUE(import_refused_with(resize("channels", {1, 2, 1, 1}, {1, 4, 4, 4}, {}),
                                  "keeping its batch and channels; this Resize takes 2x2x4x4 to scales [1, 2, 1, 1]"));
  EXPECT_TRUE(import_refused_with(resize("shrink", {1, 1, 0.5f, 0.5f}, {1, 2, 2, 2}, {}), "whole factors"));
}

}  // namespace
}  // namespace poet
