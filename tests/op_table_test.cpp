// The operator table (graph-level rules) and the runtime's kernel registration: every
// OpKind has its entry, unknown operators are rejected, the rules fit what they describe,
// and every operator an autodiff graph uses has the kernels to run and differentiate it.
#include "poet/graph/op_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "../src/graph/op_defs.h"
#include "../src/runtime/node_kernels.h"
#include "../src/runtime/op_kernels.h"
#include "poet/backward/backward.h"
#include "poet/models/zoo.h"
#include "poet/util/error.h"

namespace poet {
namespace {

using runtime::detail::op_kernels;
using runtime::detail::OpKernels;

// The ops autodiff graphs are made of: those with a gradient rule, the statistics of the
// norms among them, and the input.
std::set<OpKind> autodiff_forward_ops() {
  std::set<OpKind> ops{OpKind::Input};
  for (const OpDef& d : op_table()) {
    if (!d.gradient) continue;
    ops.insert(d.op);
    if (d.statistics) ops.insert(*d.statistics);
    if (d.saved) ops.insert(d.saved->op);
  }
  return ops;
}

TEST(OpTable, EveryOpKindHasOneEntryInOrderWithAUniqueName) {
  ASSERT_EQ(op_table().size(), kOpKindCount);
  std::set<std::string_view> names;
  for (std::size_t k = 0; k < kOpKindCount; ++k) {
    const auto op = static_cast<OpKind>(k);
    const OpDef& d = op_def(op);
    EXPECT_EQ(d.op, op) << k;
    EXPECT_FALSE(d.name.empty()) << k;
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_EQ(op_from_name(d.name), op) << d.name;
    EXPECT_EQ(op_name(op), d.name);
    EXPECT_EQ(reference_class_name(op), d.reference_class);
  }
}

TEST(OpTable, UnknownOperatorsAreRejected) {
  EXPECT_EQ(op_from_name("conv3d"), std::nullopt);
  EXPECT_EQ(op_from_name(""), std::nullopt);
  const auto bogus = static_cast<OpKind>(kOpKindCount);
  EXPECT_EQ(op_name(bogus), "unknown");
  EXPECT_EQ(reference_class_name(bogus), "");
  EXPECT_THROW(op_def(bogus), InternalError);
  EXPECT_THROW(op_kernels(bogus), InternalError);
  // Nodes of the input and of backward ops are not made from rules.
  EXPECT_THROW(apply_rules(OpKind::Input, {}), InternalError);
  EXPECT_THROW(apply_rules(OpKind::GradInput, {}), InternalError);
  // A node with too few inputs for its operator.
  EXPECT_THROW(apply_rules(OpKind::ReLU, {}), InputError);
  const std::vector<Shape> one{{2, 4}};
  EXPECT_THROW(apply_rules(OpKind::Add, {.inputs = one}), InputError);
}

// Found by fuzzing ONNX files: a pad of 2^40 on each side of two axes made a shape whose
// element count overflowed int64 in the FLOP rule. Shapes are checked before any rule
// multiplies them out; pads are bounded before they are added, reshape targets counted
// within bounds.
TEST(OpTable, ShapesBeyondAnyTensorAreInputErrors) {
  const std::vector<Shape> small{{2, 4}}, huge{{std::int64_t{1} << 30, std::int64_t{1} << 30}};
  OpArgs pad;
  pad.inputs = small;
  pad.attrs.dims = {std::int64_t{1} << 40, std::int64_t{1} << 40, std::int64_t{1} << 40, std::int64_t{1} << 40};
  EXPECT_THROW(apply_rules(OpKind::Pad, pad), InputError);
  pad.attrs.dims = {0, std::int64_t{1} << 62, 0, 0};
  EXPECT_THROW(apply_rules(OpKind::Pad, pad), InputError);
  pad.attrs.dims = {1, 2, 3, 4};
  EXPECT_EQ(apply_rules(OpKind::Pad, pad).shape, (Shape{6, 10}));
  OpArgs reshape;
  reshape.inputs = small;
  reshape.attrs.dims = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  EXPECT_THROW(apply_rules(OpKind::Reshape, reshape), InputError);
  OpArgs relu;
  relu.inputs = huge;
  EXPECT_THROW(apply_rules(OpKind::ReLU, relu), InputError);
}

// The operators torchvision's SqueezeNet, GoogLeNet and ConvNeXt brought: max-pool rounding
// up (ceil_mode), a learned tensor multiplied in (a layer scale), concatenation along any
// axis but the batch's.
TEST(OpTable, CeilModePoolLayerScaleAndConcatAlongAnyAxis) {
  const std::vector<Shape> image{{1, 2, 8, 7}};
  OpArgs pool{.inputs = image};
  pool.attrs.kernel_h = pool.attrs.kernel_w = 3;
  pool.attrs.stride_h = pool.attrs.stride_w = 2;
  EXPECT_EQ(apply_rules(OpKind::MaxPool2d, pool).shape, (Shape{1, 2, 3, 3}));
  pool.attrs.ceil_mode = true;
  EXPECT_EQ(apply_rules(OpKind::MaxPool2d, pool).shape, (Shape{1, 2, 4, 3}));  // a partial last row of windows
  EXPECT_THROW(apply_rules(OpKind::AvgPool2d, pool), InputError);             // which average pooling would miscount

  const std::vector<Shape> features{{2, 8, 4, 4}};
  OpArgs scale{.inputs = features};
  scale.attrs.dims = {1, 8, 1, 1};
  const OpResult r = apply_rules(OpKind::MulParameter, scale);
  EXPECT_EQ(r.shape, features[0]);
  EXPECT_EQ(r.params, 8);
  scale.attrs.dims = {8, 1, 1};  // the importer aligns a tensor to the activation's rank
  EXPECT_THROW(apply_rules(OpKind::MulParameter, scale), InputError);

  const std::vector<Shape> rows{{2, 3, 4, 5}, {2, 3, 1, 5}};
  OpArgs concat{.inputs = rows};
  concat.attrs.axis = 2;
  EXPECT_EQ(apply_rules(OpKind::Concat, concat).shape, (Shape{2, 3, 5, 5}));
  concat.attrs.axis = 1;  // the inputs differ along axis 2
  EXPECT_THROW(apply_rules(OpKind::Concat, concat), InputError);
  concat.attrs.axis = 0;  // the batch
  EXPECT_THROW(apply_rules(OpKind::Concat, concat), InputError);
}

TEST(OpTable, EveryRuleIsComplete) {
  for (const OpDef& d : op_table()) {
    SCOPED_TRACE(d.name);
    // Shape, FLOPs and parameters come together or not at all.
    EXPECT_EQ(d.shape != nullptr, d.flops != nullptr);
    EXPECT_EQ(d.shape != nullptr, d.params != nullptr);
    if (d.gradient) {
      EXPECT_NE(d.shape, nullptr) << "a differentiable op must be buildable";
      EXPECT_NE(d.gradient->input_flops, nullptr);
      EXPECT_NE(d.gradient->param_flops, nullptr);
    }
    if (d.statistics) {
      EXPECT_TRUE(d.gradient && d.gradient->input.stats) << "a norm's gradient reads its statistics";
      EXPECT_NE(op_def(*d.statistics).shape, nullptr);
    }
  }
}

TEST(OpTable, ShapeRulesRejectInputsThatDoNotFitNamingTheOp) {
  const std::vector<Shape> vector_in{{8}};
  const auto what = [](OpKind op, const OpArgs& args) -> std::string {
    try {
      apply_rules(op, args);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(what(OpKind::Conv2d, {.inputs = vector_in, .features = 4}).find("conv2d: needs an NCHW input"),
            std::string::npos);
  EXPECT_NE(what(OpKind::Linear, {.inputs = vector_in, .features = 4}).find("linear:"), std::string::npos);
  const std::vector<Shape> mismatched{{2, 3, 4}, {2, 5, 6}};
  EXPECT_NE(what(OpKind::MatMul, {.inputs = mismatched}).find("matmul: inner dimensions 4 and 5 differ"),
            std::string::npos);
  const std::vector<Shape> unequal{{2, 4}, {2, 8}};
  EXPECT_NE(what(OpKind::Add, {.inputs = unequal}).find("add: shapes 2x4 and 2x8 differ"), std::string::npos);
  // The reference adds unequal tensors (zero-padding the smaller); its rule lets it.
  EXPECT_EQ(what(OpKind::Add, {.inputs = unequal, .reference = true}), "");
}

TEST(OpTable, RulesGiveTheFiguresOfTheirFormulas) {
  const std::vector<Shape> rows{{3, 8}};
  const OpResult faithful = apply_rules(OpKind::Linear, {.inputs = rows, .features = 4});
  EXPECT_EQ(faithful.shape, (Shape{3, 4}));
  EXPECT_EQ(faithful.params, (8 + 1) * 4);
  EXPECT_EQ(faithful.flops, 3 * (2.0 * 8 * 4 + 4));  // every row
  const OpResult reference = apply_rules(OpKind::Linear, {.inputs = rows, .features = 4, .reference = true});
  EXPECT_EQ(reference.flops, 2.0 * 36 + 4);  // one row, whatever the batch
  const std::vector<Shape> image{{2, 4, 8, 8}};
  OpAttrs conv;
  conv.kernel_h = conv.kernel_w = 3;
  conv.pad_h = conv.pad_w = 1;
  const OpResult c = apply_rules(OpKind::Conv2d, {.inputs = image, .attrs = conv, .features = 6});
  EXPECT_EQ(c.shape, (Shape{2, 6, 8, 8}));
  EXPECT_EQ(c.params, 6 * 4 * 9 + 6);
  const OpResult stats = apply_rules(OpKind::BatchNormStats, {.inputs = image});
  EXPECT_EQ(stats.shape, (Shape{4, 2}));
  EXPECT_EQ(stats.flops, 3.0 * 2 * 4 * 8 * 8);
}

TEST(OpTable, GradientRulesAreListedInOpKindOrder) {
  const std::string listed = ops_with_gradient_rules();
  EXPECT_EQ(listed.rfind("linear, conv2d, batch_norm2d", 0), 0u) << listed;
  EXPECT_EQ(listed.find("ref_"), std::string::npos) << listed;
  EXPECT_EQ(listed.find("input"), std::string::npos) << listed;
}

// The runtime's registration covers every operator autodiff graphs use: a forward kernel
// for each; an input-gradient kernel where gradients flow through a node rather than past
// it; a parameter-gradient kernel and a parameter layout for each op whose gradient rule
// reads something for its parameters. And nothing else has kernels, so the two tables
// cannot drift apart.
TEST(OpKernels, CoverEveryOperatorAutodiffGraphsUse) {
  const std::set<OpKind> used = autodiff_forward_ops();
  for (const OpDef& d : op_table()) {
    SCOPED_TRACE(d.name);
    const OpKernels& k = op_kernels(d.op);
    EXPECT_EQ(k.forward != nullptr, used.contains(d.op));
    const bool input_gradient = d.gradient && !d.gradient->flows_through && d.gradient->differentiable_slots != 0;
    EXPECT_EQ(k.input_gradient != nullptr, input_gradient);
    // An op owns parameters unless its rule is no_params (a learned tensor's gradient may read nothing but dY);
    // add_constant's are a fixed tensor, laid out and never trained.
    const bool fixed_only = d.op == OpKind::AddConstant;
    EXPECT_EQ(k.parameter_gradient != nullptr, d.gradient && d.params != ops::no_params && !fixed_only);
    EXPECT_EQ(k.parameters != nullptr, k.parameter_gradient != nullptr || fixed_only) << "ops with parameters lay them out";
    EXPECT_GE(k.gradient_slots, 1);
  }
}

TEST(OpKernels, RunEveryNodeOfEveryZooTrainingGraph) {
  for (const auto& m : model_catalog()) {
    SCOPED_TRACE(m.name);
    const Graph g = build_autodiff_backward(build_forward_graph(m.name, {.batch_size = 1}));
    EXPECT_NO_THROW(runtime::detail::check_trainable(g));
  }
}

TEST(OpKernels, RejectAGraphWithAnOperatorTheyDoNotHave) {
  const Graph reference = build_forward_graph("transformer", {.flavor = ModelFlavor::Reference});
  Graph g = build_chain_backward(reference);
  try {
    runtime::detail::check_trainable(g);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the runtime has no kernel for op 'ref_query_key_value'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace poet
