// Builds forward graphs layer by layer. Each layer's output shape, parameter count and
// FLOPs come from its operator's rules in the operator table (poet/graph/op_table.h),
// whose FLOP formulas are the reference implementation's (POET's power_computation.py) for
// the layers it has, so that `chain` graphs match it exactly.
#pragma once

#include <string>

#include "poet/graph/graph.h"
#include "poet/graph/op_table.h"
#include "poet/models/zoo.h"

namespace poet::models {

class NetBuilder {
 public:
  NetBuilder(std::string name, ModelFlavor flavor) : graph_(std::move(name)), flavor_(flavor) {}

  ModelFlavor flavor() const { return flavor_; }
  const Shape& shape(NodeId id) const { return graph_.node(id).shape; }

  NodeId input(Shape shape);
  NodeId linear(NodeId x, std::int64_t out_features, std::string name);
  NodeId conv2d(NodeId x, std::int64_t out_channels, int kernel, int stride, int padding, std::string name,
                int groups = 1, bool bias = true);
  NodeId batch_norm(NodeId x, std::string name);
  NodeId layer_norm(NodeId x, std::string name);
  NodeId relu(NodeId x, std::string name);
  NodeId relu6(NodeId x, std::string name);
  NodeId gelu(NodeId x, std::string name);
  NodeId max_pool(NodeId x, int kernel, int stride, std::string name);
  NodeId avg_pool(NodeId x, int kernel, int stride, std::string name);
  NodeId global_avg_pool(NodeId x, std::string name);
  NodeId add(NodeId a, NodeId b, std::string name);
  NodeId flatten(NodeId x, std::string name);
  NodeId dropout(NodeId x, double p, std::string name);
  NodeId matmul(NodeId a, NodeId b, bool transpose_b, std::string name);
  NodeId softmax(NodeId x, std::string name);
  NodeId split_heads(NodeId x, int heads, std::string name);
  NodeId merge_heads(NodeId x, std::string name);
  // The loss; `classes` is the size of the last axis of x for Faithful graphs.
  NodeId loss(NodeId x, std::int64_t classes);

  // The reference's fused transformer layers (Reference flavor only).
  NodeId ref_query_key_value(NodeId x, std::int64_t seq, std::int64_t hidden, std::int64_t head_dim,
                             std::int64_t heads, std::string name);
  NodeId ref_qkt(NodeId x, std::int64_t seq, std::int64_t head_dim, std::int64_t heads, std::string name);
  NodeId ref_qktv(NodeId x, std::int64_t seq, std::int64_t head_dim, std::int64_t heads, std::string name);
  NodeId ref_linear_relu(NodeId x, std::int64_t out_features, std::string name);

  Graph finish() { return std::move(graph_); }

 private:
  NodeId pool2d(OpKind op, NodeId x, int kernel, int stride, std::string name);
  // A node of `op` reading `inputs`, made by the op's rules from `args` (whose input shapes
  // and flavor it fills in).
  NodeId make(std::string name, OpKind op, std::vector<NodeId> inputs, OpArgs args = {}, Role role = Role::Forward);

  Graph graph_;
  ModelFlavor flavor_;
};

}  // namespace poet::models
