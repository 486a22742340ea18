// The operator table: the per-operator definitions (op_defs.h) in OpKind order.
#include "poet/graph/op_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "op_defs.h"
#include "poet/util/error.h"

namespace poet {
namespace {

std::array<OpDef, kOpKindCount> make_table() {
  // In OpKind order; the check below catches an entry out of place.
  std::array<OpDef, kOpKindCount> t{
      ops::input(),          ops::linear(),         ops::conv2d(),
      ops::batch_norm2d(),   ops::batch_norm_stats(), ops::layer_norm(),
      ops::layer_norm_stats(), ops::relu_mask(),    ops::max_pool_indices(),
      ops::relu(),           ops::relu6(),
      ops::gelu(),           ops::tanh(),           ops::sigmoid(),
      ops::max_pool2d(),     ops::avg_pool2d(),     ops::global_avg_pool(),
      ops::add(),            ops::flatten(),        ops::dropout(),
      ops::matmul(),         ops::softmax(),        ops::embedding(),
      ops::split_heads(),    ops::merge_heads(),    ops::concat(),
      ops::transpose(),      ops::reshape(),        ops::slice(),
      ops::scale(),          ops::gelu_erf(),       ops::add_parameter(),
      ops::prepend_tokens(), ops::hard_sigmoid(),   ops::hard_swish(),
      ops::mul(),            ops::pad(),            ops::mul_parameter(),
      ops::div(),            ops::add_constant(),   ops::add_gathered(),
      ops::leaky_relu(),     ops::upsample_nearest(), ops::group_norm(),
      ops::group_norm_stats(), ops::conv_transpose2d(), ops::upsample_bilinear(),
      ops::elu(),            ops::softplus(),       ops::prelu(),
      ops::softmax_cross_entropy(), ops::mean_squared_error(),
      ops::ref_query_key_value(), ops::ref_qkt(),   ops::ref_qktv(),
      ops::ref_linear_relu(), ops::chain_gradient(), ops::grad_input(),
      ops::grad_param(),     ops::grad_accumulate(),
  };
  for (std::size_t k = 0; k < kOpKindCount; ++k)
    POET_CHECK(t[k].op == static_cast<OpKind>(k), fmt::format("operator table entry {} ('{}') is out of place", k,
                                                              t[k].name));
  return t;
}

}  // namespace

std::span<const OpDef> op_table() {
  static const std::array<OpDef, kOpKindCount> table = make_table();
  return table;
}

const OpDef& op_def(OpKind op) {
  const auto k = static_cast<std::size_t>(op);
  POET_CHECK(k < kOpKindCount, fmt::format("no operator {} in the table", k));
  return op_table()[k];
}

const Shape& OpArgs::input(std::size_t i) const {
  if (i >= inputs.size())
    throw InputError(fmt::format("the operator reads input {}, but the node has {} inputs", i, inputs.size()));
  return inputs[i];
}

OpResult apply_rules(OpKind op, const OpArgs& args) {
  const OpDef& d = op_def(op);
  POET_CHECK(d.shape && d.flops && d.params, fmt::format("op '{}' has no rules to make a node with", d.name));
  OpResult r;
  r.shape = d.shape(args);
  // Before any rule multiplies the dimensions out: a file can ask for any shape.
  if (!bounded_element_count(r.shape))
    throw InputError(fmt::format("operator '{}' makes a tensor of shape {}, beyond any tensor poet plans (2^48 "
                                 "elements at most, none negative); check the model's shapes and attributes",
                                 d.name, shape_string(r.shape)));
  r.flops = d.flops(args, r.shape);
  r.params = d.params(args, r.shape);
  if (d.element_bytes) r.element_bytes = d.element_bytes(args.attrs);
  return r;
}

Node node_by_rules(std::string name, OpKind op, Role role, OpResult r, std::vector<NodeId> inputs,
                   const OpArgs& args) {
  Node n;
  n.name = std::move(name);
  n.op = op;
  n.role = role;
  n.shape = std::move(r.shape);
  n.flops = r.flops;
  n.param_count = r.params;
  n.inputs = std::move(inputs);
  n.attrs = args.attrs;
  if (r.element_bytes > 0) n.element_bytes = r.element_bytes;
  return n;
}

int stored_element_bytes(const Node& n, int model) {
  const auto rule = op_def(n.op).element_bytes;
  return rule ? rule(n.attrs) : model;
}

std::int64_t trainable_parameters(const Node& n) {
  if (n.role == Role::Backward || n.param_count == 0) return 0;
  const auto untrained = op_def(n.op).untrained;
  return n.param_count - (untrained ? untrained(n) : 0);
}

std::int64_t trainable_parameters(const Graph& g) {
  std::int64_t count = 0;
  for (const Node& n : g.nodes()) count += trainable_parameters(n);
  return count;
}

std::int64_t token_vocabulary(const Graph& g) {
  std::int64_t vocab = 0;
  for (const Node& n : g.nodes())
    if (n.op == OpKind::Embedding && !n.inputs.empty() && g.node(n.inputs[0]).op == OpKind::Input &&
        !n.shape.empty() && n.shape.back() > 0) {
      const std::int64_t v = n.param_count / n.shape.back();
      vocab = vocab == 0 ? v : std::min(vocab, v);
    }
  return vocab;
}

std::optional<NodeId> in_place_input(const Graph& g, NodeId v) {
  const Node& n = g.node(v);
  if (n.inputs.empty() || n.role == Role::Loss) return std::nullopt;
  bool element_wise = n.role == Role::Forward ? op_def(n.op).in_place : n.op == OpKind::GradAccumulate;
  if (n.op == OpKind::GradInput) {
    const Node& forward = g.node(n.grad.node);
    // The loss's gradient reads no dY: its first input is the loss's own.
    element_wise = forward.role != Role::Loss && op_def(forward.op).gradient && op_def(forward.op).gradient->in_place;
  }
  const NodeId over = n.inputs.front();
  if (!element_wise || g.node(over).bytes != n.bytes || n.bytes == 0) return std::nullopt;
  return over;
}

std::string ops_with_gradient_rules() {
  std::string names;
  for (const OpDef& d : op_table()) {
    if (!d.gradient) continue;
    if (!names.empty()) names += ", ";
    names += d.name;
  }
  return names;
}

}  // namespace poet
