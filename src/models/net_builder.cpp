// Each layer is a node made by its operator's rules (op_table.h): the builder only names
// it, gathers its input shapes and passes the sizes and attributes its call gives.
#include "net_builder.h"

#include <fmt/format.h>

#include "poet/graph/op_table.h"
#include "poet/util/error.h"

namespace poet::models {

NodeId NetBuilder::make(std::string name, OpKind op, std::vector<NodeId> inputs, OpArgs args, Role role) {
  std::vector<Shape> shapes;
  for (NodeId in : inputs) shapes.push_back(shape(in));
  args.inputs = shapes;
  args.reference = flavor_ == ModelFlavor::Reference;
  OpResult r;
  try {
    r = apply_rules(op, args);
  } catch (const InputError& e) {  // the zoo's own layers do not fit: a bug of the model
    fail_internal(__FILE__, __LINE__, fmt::format("layer '{}': {}", name, e.what()));
  }
  return graph_.add(node_by_rules(std::move(name), op, role, std::move(r), std::move(inputs), args));
}

NodeId NetBuilder::input(Shape shape) {
  Node n;
  n.name = "input";
  n.op = OpKind::Input;
  n.shape = std::move(shape);
  return graph_.add(std::move(n));
}

NodeId NetBuilder::linear(NodeId x, std::int64_t out, std::string name) {
  return make(std::move(name), OpKind::Linear, {x}, {.features = out});
}

NodeId NetBuilder::conv2d(NodeId x, std::int64_t out_c, int k, int stride, int pad, std::string name, int groups,
                          bool bias) {
  OpAttrs a;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.groups = groups;
  a.bias = bias;
  return make(std::move(name), OpKind::Conv2d, {x}, {.attrs = a, .features = out_c});
}

NodeId NetBuilder::batch_norm(NodeId x, std::string name) { return make(std::move(name), OpKind::BatchNorm2d, {x}); }
NodeId NetBuilder::layer_norm(NodeId x, std::string name) { return make(std::move(name), OpKind::LayerNorm, {x}); }
NodeId NetBuilder::relu(NodeId x, std::string name) { return make(std::move(name), OpKind::ReLU, {x}); }
NodeId NetBuilder::relu6(NodeId x, std::string name) { return make(std::move(name), OpKind::ReLU6, {x}); }
NodeId NetBuilder::gelu(NodeId x, std::string name) { return make(std::move(name), OpKind::GELU, {x}); }
NodeId NetBuilder::softmax(NodeId x, std::string name) { return make(std::move(name), OpKind::Softmax, {x}); }
NodeId NetBuilder::flatten(NodeId x, std::string name) { return make(std::move(name), OpKind::Flatten, {x}); }
NodeId NetBuilder::merge_heads(NodeId x, std::string name) { return make(std::move(name), OpKind::MergeHeads, {x}); }
NodeId NetBuilder::add(NodeId a, NodeId b, std::string name) { return make(std::move(name), OpKind::Add, {a, b}); }

NodeId NetBuilder::pool2d(OpKind op, NodeId x, int k, int stride, std::string name) {
  OpAttrs a;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = stride;
  return make(std::move(name), op, {x}, {.attrs = a});
}

NodeId NetBuilder::max_pool(NodeId x, int k, int stride, std::string name) {
  return pool2d(OpKind::MaxPool2d, x, k, stride, std::move(name));
}

NodeId NetBuilder::avg_pool(NodeId x, int k, int stride, std::string name) {
  return pool2d(OpKind::AvgPool2d, x, k, stride, std::move(name));
}

NodeId NetBuilder::global_avg_pool(NodeId x, std::string name) {
  return make(std::move(name), OpKind::GlobalAvgPool, {x});
}

NodeId NetBuilder::dropout(NodeId x, double p, std::string name) {
  OpAttrs a;
  a.dropout_p = p;
  return make(std::move(name), OpKind::Dropout, {x}, {.attrs = a});
}

NodeId NetBuilder::matmul(NodeId a, NodeId b, bool transpose_b, std::string name) {
  OpAttrs attrs;
  attrs.transpose_b = transpose_b;
  return make(std::move(name), OpKind::MatMul, {a, b}, {.attrs = attrs});
}

NodeId NetBuilder::split_heads(NodeId x, int heads, std::string name) {
  OpAttrs a;
  a.heads = heads;
  return make(std::move(name), OpKind::SplitHeads, {x}, {.attrs = a});
}

NodeId NetBuilder::loss(NodeId x, std::int64_t classes) {
  return make("loss", OpKind::SoftmaxCrossEntropy, {x}, {.features = classes}, Role::Loss);
}

NodeId NetBuilder::ref_query_key_value(NodeId x, std::int64_t seq, std::int64_t hidden, std::int64_t head_dim,
                                       std::int64_t heads, std::string name) {
  return make(std::move(name), OpKind::RefQueryKeyValue, {x},
              {.seq = seq, .hidden = hidden, .head_dim = head_dim, .heads = heads});
}

NodeId NetBuilder::ref_qkt(NodeId x, std::int64_t seq, std::int64_t head_dim, std::int64_t heads, std::string name) {
  return make(std::move(name), OpKind::RefQKT, {x}, {.seq = seq, .head_dim = head_dim, .heads = heads});
}

NodeId NetBuilder::ref_qktv(NodeId x, std::int64_t seq, std::int64_t head_dim, std::int64_t heads, std::string name) {
  return make(std::move(name), OpKind::RefQKTV, {x}, {.seq = seq, .head_dim = head_dim, .heads = heads});
}

NodeId NetBuilder::ref_linear_relu(NodeId x, std::int64_t out_features, std::string name) {
  return make(std::move(name), OpKind::RefLinearReLU, {x}, {.features = out_features});
}

}  // namespace poet::models
