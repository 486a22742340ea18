// The image and signal operators of small on-device models that map onto poet's 2-D ones:
// Resize by whole factors (nearest-neighbour upsampling), the 1-D convolution, made as a
// 2-D one over an image of one row, and the transposed convolution. tiny_upsample,
// tiny_conv1d and tiny_decoder hold them to PyTorch (onnx_parity_test.cpp); these check what
// the importer makes of them.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <string>
#include <vector>

#include "onnx_builder.h"
#include "poet/graph/graph.h"
#include "poet/onnx/onnx_import.h"

namespace poet {
namespace {

using namespace testing::onnx_builder;

// ONNX's default coordinates (half_pixel, rounded) pick the same source pixels as torch's
// export (asymmetric, floor) for whole factors, and so do TensorFlow exporters'
// tf_half_pixel_for_nn with floor, (out + 0.5) / factor: all are blocks of copies.
TEST(OnnxImport, ResizeByWholeFactorsIsAnUpsampling) {
  for (const std::string coordinates : {"half_pixel", "tf_half_pixel_for_nn"}) {
    const std::string path = write_model("resize_" + coordinates, {2, 2, 3, 3}, {2, 108}, [&](auto& g) {
      add_floats_initializer(g, "scales", {1, 1, 2, 3});
      auto* resize = add_node(g, "up", "Resize", {"x", "", "scales"}, "u");
      add_string_attribute(resize, "coordinate_transformation_mode", coordinates);
      if (coordinates != "half_pixel") add_string_attribute(resize, "nearest_mode", "floor");
      add_node(g, "flatten", "Flatten", {"u"}, "y");
    });
    const OnnxModel m = import_onnx(path, {.batch_size = 2});
    const auto up =
        std::ranges::find_if(m.forward.nodes(), [](const Node& n) { return n.op == OpKind::UpsampleNearest; });
    ASSERT_NE(up, m.forward.nodes().end()) << coordinates;
    EXPECT_EQ(up->attrs.kernel_h, 2);
    EXPECT_EQ(up->attrs.kernel_w, 3);
    EXPECT_EQ(up->shape, (Shape{2, 2, 6, 9}));
  }
}

// interpolate(..., recompute_scale_factor=True) computes its sizes from the input's shape
// through Floor: folded as a constant, they make the same upsampling.
TEST(OnnxImport, ResizeSizesComputedThroughFloorAndCeilAreFolded) {
  const std::string path = write_model("resize_floor", {2, 2, 3, 3}, {2, 108}, [](auto& g) {
    add_floats_initializer(g, "scaled", {2.0f, 2.0f, 6.7f, 8.2f});  // floor: [2, 2, 6, 8]; ceil of the last: 9
    add_floats_initializer(g, "column", {0, 0, 0, 0.5f});
    add_node(g, "floor", "Floor", {"scaled"}, "floored");
    add_node(g, "ceil", "Ceil", {"column"}, "one_more");
    add_node(g, "sum", "Add", {"floored", "one_more"}, "sized");
    add_int_attribute(add_node(g, "cast", "Cast", {"sized"}, "sizes"), "to", ::onnx::TensorProto::INT64);
    add_node(g, "up", "Resize", {"x", "", "", "sizes"}, "u");
    add_node(g, "flatten", "Flatten", {"u"}, "y");
  });
  const OnnxModel m = import_onnx(path, {.batch_size = 2});
  const auto up = std::ranges::find_if(m.forward.nodes(), [](const Node& n) { return n.op == OpKind::UpsampleNearest; });
  ASSERT_NE(up, m.forward.nodes().end());
  EXPECT_EQ(up->shape, (Shape{2, 2, 6, 9}));
}

// A 1-D convolution is a 2-D one over an image of one row; tiny_conv1d holds it to PyTorch.
// The signal is held so through the layers after it (a ReLU, a dropout, a 1-D max-pool, an
// Add, a flatten), and reshaped back once where a reader needs it as a signal (the Mul, of it
// by itself).
TEST(OnnxImport, Conv1dIsAConvolutionOverAnImageOfOneRow) {
  const std::string path = write_model("conv1d", {2, 3, 10}, {2, 20}, [](auto& g) {
    add_initializer(g, "w", {4, 3, 3}, 0.1f);
    auto* conv = add_node(g, "conv", "Conv", {"x", "w"}, "c");
    add_ints_attribute(conv, "pads", {1, 1});
    add_ints_attribute(conv, "strides", {2});
    add_node(g, "flatten", "Flatten", {"c"}, "y");
  });
  const OnnxModel m = import_onnx(path, {.batch_size = 2});
  std::vector<OpKind> ops;
  for (const Node& n : m.forward.nodes()) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<OpKind>{OpKind::Input, OpKind::Reshape, OpKind::Conv2d, OpKind::Flatten,
                                      OpKind::SoftmaxCrossEntropy}));
  const Node& conv = m.forward.node(2);
  EXPECT_EQ(conv.shape, (Shape{2, 4, 1, 5}));
  EXPECT_EQ(conv.attrs.kernel_h, 1);
  EXPECT_EQ(conv.attrs.kernel_w, 3);
  EXPECT_EQ(conv.attrs.pad_h, 0);
  EXPECT_EQ(conv.attrs.pad_w, 1);

  const std::string chain = write_model("conv1d_chain", {2, 3, 10}, {2, 20}, [](auto& g) {
    add_initializer(g, "w", {4, 3, 3}, 0.1f);
    add_ints_attribute(add_node(g, "conv", "Conv", {"x", "w"}, "c"), "pads", {1, 1});
    add_node(g, "relu", "Relu", {"c"}, "r");
    add_initializer(g, "ratio", {}, 0.25f);
    add_node(g, "drop", "Dropout", {"r", "ratio"}, "d");
    auto* pool = add_node(g, "pool", "MaxPool", {"d"}, "p");
    add_ints_attribute(pool, "kernel_shape", {2});
    add_ints_attribute(pool, "strides", {2});
    add_node(g, "twice", "Add", {"p", "p"}, "t");
    add_node(g, "square", "Mul", {"t", "t"}, "s");
    add_node(g, "flatten", "Flatten", {"s"}, "y");
  });
  const OnnxModel held = import_onnx(chain, {.batch_size = 2});
  ops.clear();
  for (const Node& n : held.forward.nodes()) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<OpKind>{OpKind::Input, OpKind::Reshape, OpKind::Conv2d, OpKind::ReLU, OpKind::Dropout,
                                      OpKind::MaxPool2d, OpKind::Add, OpKind::Reshape, OpKind::Mul, OpKind::Flatten,
                                      OpKind::SoftmaxCrossEntropy}));
  EXPECT_EQ(held.forward.node(6).shape, (Shape{2, 4, 1, 5}));
  EXPECT_EQ(held.forward.node(7).shape, (Shape{2, 4, 5}));
  EXPECT_EQ(held.forward.node(8).inputs, (std::vector<NodeId>{7, 7}));
}

// ConvTranspose (a decoder's upsampling) takes its weight [in, out/groups, kh, kw] and an
// output padding; a 1-D one goes over an image of one row, as Conv1d. tiny_decoder holds
// both to PyTorch.
TEST(OnnxImport, ConvTransposeTakesItsOutputPaddingAndSignals) {
  const auto transposed = [](const std::string& name, const Shape& x, const Shape& w, const Shape& y,
                             std::vector<std::int64_t> output_padding, bool output_shape = false) {
    return write_model(name, x, y, [&](auto& g) {
      add_initializer(g, "w", w, 0.1f);
      auto* up = add_node(g, "up", "ConvTranspose", {"x", "w"}, "u");
      add_ints_attribute(up, "strides", std::vector<std::int64_t>(x.size() - 2, 2));
      add_ints_attribute(up, "pads", std::vector<std::int64_t>(2 * (x.size() - 2), 1));
      if (!output_padding.empty()) add_ints_attribute(up, "output_padding", output_padding);
      if (output_shape) add_ints_attribute(up, "output_shape", {6, 6});
      add_node(g, "flatten", "Flatten", {"u"}, "y");
    });
  };
  const OnnxModel image = import_onnx(transposed("transposed", {2, 4, 3, 3}, {4, 3, 3, 3}, {2, 108}, {1, 1}),
                                      {.batch_size = 2});
  const Node& up = image.forward.node(1);
  EXPECT_EQ(up.op, OpKind::ConvTranspose2d);
  EXPECT_EQ(up.shape, (Shape{2, 3, 6, 6}));  // (3 - 1) 2 - 2 + 3 + 1
  EXPECT_EQ(up.attrs.dims, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(up.param_count, 4 * 3 * 9);

  const OnnxModel signal =
      import_onnx(transposed("transposed_1d", {2, 4, 5}, {4, 2, 3}, {2, 20}, {1}), {.batch_size = 2});
  std::vector<OpKind> ops;
  for (const Node& n : signal.forward.nodes()) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<OpKind>{OpKind::Input, OpKind::Reshape, OpKind::ConvTranspose2d, OpKind::Flatten,
                                      OpKind::SoftmaxCrossEntropy}));
  EXPECT_EQ(signal.forward.node(2).shape, (Shape{2, 2, 1, 10}));  // (5 - 1) 2 - 2 + 3 + 1 columns, one row

  EXPECT_TRUE(import_refused_with(transposed("output_shape", {2, 4, 3, 3}, {4, 3, 3, 3}, {2, 108}, {}, true),
                                  "takes pads and output_padding, not output_shape; export with output_padding"));
  EXPECT_TRUE(import_refused_with(transposed("too_much", {2, 4, 3, 3}, {4, 3, 3, 3}, {2, 147}, {2, 2}),
                                  "its output_padding [2, 2] is not below its strides [2, 2]: poet's "
                                  "transposed convolution adds 0 to stride - 1 rows and columns"));
}

}  // namespace
}  // namespace poet
