// The real backward graph, derived from the gradient rules of the operator table
// (poet/graph/op_table.h).
//
// 1. The forward nodes are copied, each batch / layer norm lowered into a statistics node
//    and the norm itself, so that the backward can read the statistics without the output;
//    beside each node whose backward keeps a compact tensor instead of a full one (ReLU's
//    1-bit mask after it, max-pool's arg-max indices before it; OpDef::saved), the node
//    that makes it, where that backward will be taken (an input depends on parameters).
// 2. Walking the forward nodes from the loss back, each node's incoming gradient dY is its
//    single contribution, or a GradAccumulate of several when its output is used more than
//    once (placed directly after the last contribution); then one GradParam node if the
//    node has parameters, and one GradInput node per differentiable input that leads to
//    parameters. Cost: O(nodes + edges) apart from the per-node scans of its own inputs.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "poet/backward/backward.h"
#include "poet/graph/op_table.h"
#include "poet/util/error.h"

namespace poet {
namespace {

// A norm, lowered into a statistics node and the norm reading it.
bool is_norm(OpKind op) { return op_def(op).statistics.has_value(); }

// The node of `saved.op` that keeps what the backward of forward node f needs, reading
// `reads` (f's input 0, or f's output); made by the op's rules from f's output shape and
// attributes.
Node saved_node(const Node& f, NodeId reads, const SavedForBackward& saved) {
  const OpArgs args{.inputs = std::span(&f.shape, 1), .attrs = f.attrs};
  return node_by_rules(fmt::format("{}.{}", f.name, op_name(saved.op)), saved.op, Role::Forward,
                       apply_rules(saved.op, args), {reads}, args);
}

// Copies the forward graph, lowering norms and adding the compact tensors the backward
// keeps. extra[v] is the statistics node of norm v, or the saved node of v.
Graph lower_forward(const Graph& forward, std::vector<NodeId>& extra) {
  Graph g(forward.name());
  std::vector<NodeId> id(forward.size());
  std::vector<bool> needs_grad;  // per node of g: its output depends on parameters
  extra.assign(2 * forward.size(), -1);  // lowering adds at most one node per forward node
  for (NodeId v = 0; v < static_cast<NodeId>(forward.size()); ++v) {
    Node n = forward.node(v);
    for (NodeId& in : n.inputs) in = id[in];
    bool inputs_need_grad = false;
    for (NodeId in : n.inputs) inputs_need_grad = inputs_need_grad || needs_grad[in];
    const bool node_needs_grad = inputs_need_grad || trainable_parameters(n) > 0;
    if (is_norm(n.op)) {
      const Shape x = g.node(n.inputs.at(0)).shape;
      Node s;
      s.name = n.name + ".stats";
      s.op = *op_def(n.op).statistics;
      s.attrs.epsilon = n.attrs.epsilon;  // the statistics hold 1 / sqrt(var + epsilon)
      s.attrs.groups = n.attrs.groups;    // a group norm's statistics are per group
      OpResult stats_rule = apply_rules(s.op, {.inputs = std::span(&x, 1), .attrs = s.attrs});
      s.shape = std::move(stats_rule.shape);
      s.element_bytes = n.element_bytes;
      s.flops = stats_rule.flops;
      s.inputs = {n.inputs.at(0)};
      const NodeId sid = g.add(std::move(s));
      needs_grad.push_back(false);
      n.inputs.push_back(sid);
      n.bytes = 0;  // recomputed from the shape by Graph::add
      id[v] = g.add(std::move(n));
      needs_grad.push_back(node_needs_grad);
      extra[id[v]] = sid;
    } else {
      n.bytes = 0;
      const std::optional<SavedForBackward> saved = op_def(n.op).saved;
      const bool keeps = saved && inputs_need_grad;
      NodeId sid = -1;
      if (keeps && !saved->reads_output) {
        sid = g.add(saved_node(n, n.inputs.at(0), *saved));
        needs_grad.push_back(false);
      }
      id[v] = g.add(std::move(n));
      needs_grad.push_back(node_needs_grad);
      if (keeps && saved->reads_output) {
        sid = g.add(saved_node(g.node(id[v]), id[v], *saved));
        needs_grad.push_back(false);
      }
      if (keeps) extra[id[v]] = sid;
    }
  }
  return g;
}

// A node that keeps something for the backward (a norm's statistics, a saved node): it
// reads forward tensors but passes no gradient to them.
bool keeps_for_backward(OpKind op) {
  for (const OpDef& d : op_table())
    if (d.statistics == op || (d.saved && d.saved->op == op)) return true;
  return false;
}

class Differentiator {
 public:
  explicit Differentiator(const Graph& forward) : g_(lower_forward(forward, extra_)) {
    const auto n = g_.size();
    forward_size_ = static_cast<NodeId>(n);
    contributions_.resize(n);
    gradient_.resize(n);
    settled_.assign(n, false);
    requires_grad_.assign(n, false);
    earliest_reader_.assign(n, -1);
    for (NodeId v = forward_size_; v-- > 0;) {
      // A statistics or saved node reads x but passes no gradient to it: its norm does.
      if (keeps_for_backward(g_.node(v).op)) continue;
      for (NodeId in : g_.node(v).inputs) earliest_reader_[in] = v;
    }
    for (NodeId v = 0; v < forward_size_; ++v) {
      const Node& node = g_.node(v);
      bool r = trainable_parameters(node) > 0;  // fixed parameters (a constant mask) need none
      for (NodeId in : node.inputs) r = r || requires_grad_[in];
      requires_grad_[v] = r;
    }
  }

  Graph run() {
    for (NodeId v = forward_size_; v-- > 0;) {
      differentiate(v);
      // Inputs v made no contribution to (v does not reach the loss, or the slot is not
      // differentiable) are settled here if v was their last reader to be visited.
      for (NodeId in : g_.node(v).inputs) settle_if_complete(in, v);
    }
    return std::move(g_);
  }

 private:
  void differentiate(NodeId v) {
    const Node fwd = g_.node(v);  // a copy: adding nodes may reallocate
    if (fwd.op == OpKind::Input || keeps_for_backward(fwd.op)) return;
    const std::optional<GradientRule>& rule = op_def(fwd.op).gradient;
    if (!rule)
      throw InputError(fmt::format(
          "no gradient rule for op '{}' (node '{}'): the autodiff backward supports only {}; use --backward "
          "chain for reference graphs",
          op_name(fwd.op), fwd.name, ops_with_gradient_rules()));
    std::optional<NodeId> dy;
    if (fwd.role != Role::Loss) {
      POET_CHECK(settled_[v] || earliest_reader_[v] < 0, fmt::format("gradient of '{}' read before it is complete", fwd.name));
      dy = gradient_[v];
      if (!dy) return;  // the output does not reach the loss
    }
    // The parameter gradient first: it is the last reader of the layer's input x (a
    // convolution's or linear layer's), which can then be freed before dX is made, so that
    // dY, x and dX are never needed at once.
    if (trainable_parameters(fwd) > 0) {
      Node grad = gradient_node(fwd, v, GradOf::kParams, rule->params, dy);
      grad.op = OpKind::GradParam;
      grad.name = fmt::format("dparams({})", fwd.name);
      grad.shape = {trainable_parameters(fwd)};  // batch norm's running statistics are not trained
      grad.flops = rule->param_flops(fwd, g_.node(fwd.inputs.at(0)));
      g_.add(std::move(grad));  // bytes stay 0: it is written to the gradient region
    }
    const int slots = rule->differentiable_slots < 0 ? static_cast<int>(fwd.inputs.size()) : rule->differentiable_slots;
    for (int k = 0; k < slots; ++k) {
      const NodeId in = fwd.inputs[k];
      if (requires_grad_[in]) {
        if (rule->flows_through) {
          contributions_[in].push_back(*dy);
        } else {
          Node grad = gradient_node(fwd, v, k, rule->input, dy);
          grad.op = OpKind::GradInput;
          grad.name = fmt::format("d{}<-{}", g_.node(in).name, fwd.name);
          // x read in two slots (x @ x) gets one gradient per slot; the slot tells them apart.
          if (std::count(fwd.inputs.begin(), fwd.inputs.end(), in) > 1) grad.name += fmt::format("#{}", k);
          grad.shape = g_.node(in).shape;
          grad.element_bytes = g_.node(in).element_bytes;
          grad.flops = rule->input_flops(fwd, g_.node(in));
          contributions_[in].push_back(g_.add(std::move(grad)));
        }
      }
      // The accumulate comes directly after the last contribution, so the contributions
      // can be freed as early as possible.
      if (std::find(fwd.inputs.begin() + k + 1, fwd.inputs.begin() + slots, in) == fwd.inputs.begin() + slots)
        settle_if_complete(in, v);
    }
  }

  // Once `reader`, the earliest reader of `v`, has been differentiated, every contribution
  // to dY of v is known: dY is the one contribution, or a GradAccumulate of several.
  void settle_if_complete(NodeId v, NodeId reader) {
    if (settled_[v] || earliest_reader_[v] != reader) return;
    settled_[v] = true;
    const auto& parts = contributions_[v];
    if (parts.empty()) return;
    if (parts.size() == 1) {
      gradient_[v] = parts.front();
      return;
    }
    Node acc;
    acc.name = fmt::format("d{}", g_.node(v).name);
    acc.op = OpKind::GradAccumulate;
    acc.role = Role::Backward;
    acc.shape = g_.node(v).shape;
    acc.element_bytes = g_.node(v).element_bytes;
    acc.flops = static_cast<double>(element_count(acc.shape)) * static_cast<double>(parts.size() - 1);
    acc.inputs = parts;
    acc.grad = {v, 0};  // the gradient of v's output (validate() does not read an accumulate's slot)
    gradient_[v] = g_.add(std::move(acc));
  }

  Node gradient_node(const Node& fwd, NodeId v, int slot, const Needs& needs, std::optional<NodeId> dy) const {
    Node n;
    n.role = Role::Backward;
    n.element_bytes = fwd.element_bytes;
    n.grad = {v, slot};
    // In the order [dY, inputs, output, statistics or saved node].
    if (dy) n.inputs.push_back(*dy);
    for (int j = 0; j < static_cast<int>(fwd.inputs.size()); ++j) {
      const bool same = j == slot;
      if (is_norm(fwd.op) && j > 0) continue;  // the statistics are added below
      if (needs.all_inputs || (needs.same_input && same) || (needs.other_inputs && !same))
        n.inputs.push_back(fwd.inputs[j]);
    }
    if (needs.output) n.inputs.push_back(v);
    if (needs.stats || needs.saved) n.inputs.push_back(extra_.at(v));
    // Each tensor once (x @ x reads x once).
    std::vector<NodeId> unique;
    for (NodeId in : n.inputs)
      if (std::find(unique.begin(), unique.end(), in) == unique.end()) unique.push_back(in);
    n.inputs = std::move(unique);
    return n;
  }

  std::vector<NodeId> extra_;  // before g_: lower_forward fills it while g_ is built
  Graph g_;
  NodeId forward_size_ = 0;
  std::vector<std::vector<NodeId>> contributions_;  // contributions_[v]: parts of dY of v
  std::vector<std::optional<NodeId>> gradient_;     // dY of v, once settled
  std::vector<bool> settled_;
  std::vector<NodeId> earliest_reader_;  // first forward node reading v (-1: none); visited last
  std::vector<bool> requires_grad_;      // v depends on parameters
};

}  // namespace

Graph build_autodiff_backward(const Graph& forward) {
  if (forward.has_backward())
    throw InputError(fmt::format("graph '{}' already has backward nodes", forward.name()));
  forward.loss();  // throws if there is none
  Graph g = Differentiator(forward).run();
  g.validate();
  return g;
}

}  // namespace poet
