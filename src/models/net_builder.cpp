#include "net_builder.h"

#include <fmt/format.h>

#include "poet/util/error.h"

namespace poet::models {
namespace {

double elements(const Shape& s) { return static_cast<double>(element_count(s)); }

}  // namespace

NodeId NetBuilder::add_node(std::string name, OpKind op, Shape shape, double flops, std::int64_t params,
                            std::vector<NodeId> inputs, OpAttrs attrs, Role role) {
  Node n;
  n.name = std::move(name);
  n.op = op;
  n.role = role;
  n.shape = std::move(shape);
  n.flops = flops;
  n.param_count = params;
  n.inputs = std::move(inputs);
  n.attrs = attrs;
  return graph_.add(std::move(n));
}

NodeId NetBuilder::input(Shape shape) { return add_node("input", OpKind::Input, std::move(shape), 0, 0, {}); }

NodeId NetBuilder::linear(NodeId x, std::int64_t out, std::string name) {
  const Shape& in = shape(x);
  POET_CHECK(in.size() >= 2, fmt::format("linear '{}' needs a [rows..., features] input", name));
  const std::int64_t in_features = in.back();
  Shape out_shape = in;
  out_shape.back() = out;
  const std::int64_t params = (in_features + 1) * out;
  // The reference counts one row whatever the batch: 2 x params + out. Faithful graphs
  // count every row: 2 x in x out multiply-adds and the bias add, per row.
  const double rows = elements(in) / static_cast<double>(in_features);
  const double flops = flavor_ == ModelFlavor::Reference
                           ? 2.0 * static_cast<double>(params) + static_cast<double>(out)
                           : rows * (2.0 * static_cast<double>(in_features * out) + static_cast<double>(out));
  return add_node(std::move(name), OpKind::Linear, std::move(out_shape), flops, params, {x});
}

NodeId NetBuilder::conv2d(NodeId x, std::int64_t out_c, int k, int stride, int pad, std::string name, int groups,
                          bool bias) {
  const Shape& in = shape(x);
  POET_CHECK(in.size() == 4, fmt::format("conv2d '{}' needs an NCHW input", name));
  POET_CHECK(in[1] % groups == 0 && out_c % groups == 0, fmt::format("conv2d '{}': groups must divide channels", name));
  const std::int64_t h = (in[2] - k + 2 * pad) / stride + 1;
  const std::int64_t w = (in[3] - k + 2 * pad) / stride + 1;
  Shape out_shape{in[0], out_c, h, w};
  const std::int64_t params = out_c * (in[1] / groups) * k * k + (bias ? out_c : 0);
  // The reference: 2 x k^2 x |input| x out_channels + |output| (it charges every output
  // channel against every input position; kept as is for parity). Grouped convolutions
  // see 1/groups of the input channels.
  const double flops = 2.0 * k * k * elements(in) * static_cast<double>(out_c) / groups + elements(out_shape);
  OpAttrs a;
  a.kernel_h = a.kernel_w = k;
  a.stride = stride;
  a.pad_h = a.pad_w = pad;
  a.groups = groups;
  a.bias = bias;
  return add_node(std::move(name), OpKind::Conv2d, std::move(out_shape), flops, params, {x}, a);
}

NodeId NetBuilder::batch_norm(NodeId x, std::string name) {
  const Shape in = shape(x);
  // Reference: 4 parameters per channel (scale, shift and the running statistics) and
  // 2 FLOP per element.
  return add_node(std::move(name), OpKind::BatchNorm2d, in, 2.0 * elements(in), 4 * in[1], {x});
}

NodeId NetBuilder::layer_norm(NodeId x, std::string name) {
  const Shape in = shape(x);
  // Mean, variance, normalize, scale and shift: about 8 FLOP per element.
  return add_node(std::move(name), OpKind::LayerNorm, in, 8.0 * elements(in), 2 * in.back(), {x});
}

NodeId NetBuilder::relu(NodeId x, std::string name) {
  const Shape in = shape(x);
  return add_node(std::move(name), OpKind::ReLU, in, elements(in), 0, {x});
}

NodeId NetBuilder::relu6(NodeId x, std::string name) {
  const Shape in = shape(x);
  return add_node(std::move(name), OpKind::ReLU6, in, 2.0 * elements(in), 0, {x});
}

NodeId NetBuilder::gelu(NodeId x, std::string name) {
  const Shape in = shape(x);
  // The tanh approximation: about 10 FLOP per element.
  return add_node(std::move(name), OpKind::GELU, in, 10.0 * elements(in), 0, {x});
}

NodeId NetBuilder::pool2d(OpKind op, NodeId x, int k, int stride, std::string name) {
  const Shape& in = shape(x);
  Shape out{in[0], in[1], (in[2] - k) / stride + 1, (in[3] - k) / stride + 1};
  OpAttrs a;
  a.kernel_h = a.kernel_w = k;
  a.stride = stride;
  const double flops = 2.0 * k * k * elements(out);  // the reference's formula, max and average alike
  return add_node(std::move(name), op, std::move(out), flops, 0, {x}, a);
}

NodeId NetBuilder::max_pool(NodeId x, int k, int stride, std::string name) {
  return pool2d(OpKind::MaxPool2d, x, k, stride, std::move(name));
}

NodeId NetBuilder::avg_pool(NodeId x, int k, int stride, std::string name) {
  return pool2d(OpKind::AvgPool2d, x, k, stride, std::move(name));
}

NodeId NetBuilder::global_avg_pool(NodeId x, std::string name) {
  const Shape& in = shape(x);
  return add_node(std::move(name), OpKind::GlobalAvgPool, {in[0], in[1]}, 2.0 * elements(in), 0, {x});
}

NodeId NetBuilder::add(NodeId a, NodeId b, std::string name) {
  const Shape out = shape(a);
  // The reference adds tensors of different sizes in resnet50 (zero-padding the smaller,
  // its section 3.3); Faithful graphs must add equal shapes.
  POET_CHECK(flavor_ == ModelFlavor::Reference || out == shape(b),
             fmt::format("add '{}': shapes {} and {} differ", name, shape_string(out), shape_string(shape(b))));
  return add_node(std::move(name), OpKind::Add, out, elements(out), 0, {a, b});
}

NodeId NetBuilder::flatten(NodeId x, std::string name) {
  const Shape& in = shape(x);
  Shape out{in[0], element_count(in) / in[0]};
  const double flops = elements(out);
  return add_node(std::move(name), OpKind::Flatten, std::move(out), flops, 0, {x});
}

NodeId NetBuilder::dropout(NodeId x, double p, std::string name) {
  const Shape in = shape(x);
  OpAttrs a;
  a.dropout_p = p;
  return add_node(std::move(name), OpKind::Dropout, in, elements(in), 0, {x}, a);
}

NodeId NetBuilder::matmul(NodeId a, NodeId b, bool transpose_b, std::string name) {
  const Shape& sa = shape(a);
  const Shape& sb = shape(b);
  POET_CHECK(sa.size() >= 2 && sa.size() == sb.size(), fmt::format("matmul '{}': ranks differ", name));
  const std::int64_t m = sa[sa.size() - 2], k = sa.back();
  const std::int64_t kb = transpose_b ? sb.back() : sb[sb.size() - 2];
  const std::int64_t n = transpose_b ? sb[sb.size() - 2] : sb.back();
  POET_CHECK(k == kb, fmt::format("matmul '{}': inner dimensions {} and {} differ", name, k, kb));
  Shape out = sa;
  out.back() = n;
  const double batch = elements(sa) / static_cast<double>(m * k);
  OpAttrs attrs;
  attrs.transpose_b = transpose_b;
  return add_node(std::move(name), OpKind::MatMul, std::move(out), 2.0 * batch * m * n * k, 0, {a, b}, attrs);
}

NodeId NetBuilder::softmax(NodeId x, std::string name) {
  const Shape in = shape(x);
  // Max, subtract, exp, sum, divide: about 5 FLOP per element.
  return add_node(std::move(name), OpKind::Softmax, in, 5.0 * elements(in), 0, {x});
}

NodeId NetBuilder::split_heads(NodeId x, int heads, std::string name) {
  const Shape& in = shape(x);  // [B, S, H * D]
  POET_CHECK(in.size() == 3 && in[2] % heads == 0, fmt::format("split_heads '{}': bad input", name));
  Shape out{in[0], heads, in[1], in[2] / heads};
  OpAttrs a;
  a.heads = heads;
  const double flops = elements(out);  // a copy, charged like the reference's flatten
  return add_node(std::move(name), OpKind::SplitHeads, std::move(out), flops, 0, {x}, a);
}

NodeId NetBuilder::merge_heads(NodeId x, std::string name) {
  const Shape& in = shape(x);  // [B, heads, S, D]
  Shape out{in[0], in[2], in[1] * in[3]};
  const double flops = elements(out);
  return add_node(std::move(name), OpKind::MergeHeads, std::move(out), flops, 0, {x});
}

NodeId NetBuilder::loss(NodeId x, std::int64_t classes) {
  const Shape& in = shape(x);
  // Reference: output (classes,), FLOPs |input| x classes. Faithful: the output is the
  // class probabilities, the shape of the logits.
  Shape out = flavor_ == ModelFlavor::Reference ? Shape{classes} : in;
  const double flops = elements(in) * static_cast<double>(classes);
  return add_node("loss", OpKind::SoftmaxCrossEntropy, std::move(out), flops, 0, {x}, {}, Role::Loss);
}

NodeId NetBuilder::ref_query_key_value(NodeId x, std::int64_t seq, std::int64_t hidden, std::int64_t head_dim,
                                       std::int64_t heads, std::string name) {
  Shape out{3 * seq, head_dim, heads};
  const double flops = 3.0 * seq * hidden * head_dim * heads;
  return add_node(std::move(name), OpKind::RefQueryKeyValue, std::move(out), flops, 3 * hidden * head_dim * heads,
                  {x});
}

NodeId NetBuilder::ref_qkt(NodeId x, std::int64_t seq, std::int64_t head_dim, std::int64_t heads, std::string name) {
  Shape out{seq, seq, heads};
  // Q K^T, then the mask and the dropout, one FLOP per score each.
  const double flops = static_cast<double>(seq) * head_dim * seq * heads + 2.0 * elements(out);
  return add_node(std::move(name), OpKind::RefQKT, std::move(out), flops, 0, {x});
}

NodeId NetBuilder::ref_qktv(NodeId x, std::int64_t seq, std::int64_t head_dim, std::int64_t heads, std::string name) {
  Shape out{seq, head_dim * heads};
  // Scores x V, then the concatenation of the heads.
  const double flops = 2.0 * seq * seq * head_dim * heads;
  return add_node(std::move(name), OpKind::RefQKTV, std::move(out), flops, 0, {x});
}

NodeId NetBuilder::ref_linear_relu(NodeId x, std::int64_t out_features, std::string name) {
  const Shape& in = shape(x);
  Shape out{in[0], out_features};
  const std::int64_t params = (in.back() + 1) * out_features;
  const double flops = 2.0 * static_cast<double>(params) + static_cast<double>(out_features) + elements(out);
  return add_node(std::move(name), OpKind::RefLinearReLU, std::move(out), flops, params, {x});
}

}  // namespace poet::models
