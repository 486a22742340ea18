// Node -> kernel calls, through the runtime's operator table (op_kernels.h): a forward
// node runs its op's forward kernel; a gradient node the input- or parameter-gradient
// kernel of the forward node it differentiates (GradOf::node), whose shapes it uses.
#include "node_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "op_kernels.h"
#include "poet/graph/op_table.h"
#include "poet/kernels/kernels.h"
#include "poet/util/error.h"

namespace poet::runtime::detail {

using namespace kernels;  // the kernels this module binds to operators
namespace {

// The forward node whose kernels run node n: n itself, or the node a gradient differentiates.
NodeId forward_of(const Node& n, NodeId v) {
  return n.role == Role::Backward && n.op != OpKind::GradAccumulate ? n.grad.node : v;
}

// Contributions summed in input order, the same order in every plan.
void accumulate(std::span<float> sum, std::span<const std::span<float>> parts) {
  add_forward(parts[0], parts[1], sum);
  for (std::size_t i = 2; i < parts.size(); ++i) add_forward(sum, parts[i], sum);
}

// A graph file can give a node any shape. The kernels trust their output tensor's shape, so
// a forward node of the commonest operators is held to the shape its inputs make, as a zoo
// or ONNX graph is made: an element-wise one (OpDef::in_place) to its first input's, a
// pool to what its rules make, conv2d and linear to what their rules make with their own
// output channels or features. The other operators' kernels check their own shapes.
void check_shape_by_rules(const Graph& g, const Node& n, NodeId v) {
  const OpDef& d = op_def(n.op);
  if (n.role == Role::Backward || n.shape.empty() || n.inputs.empty()) return;
  const auto wrong = [&](const std::string& why) {
    return InputError(fmt::format("node '{}' ({}) of op '{}': {}; fix the graph file, or write it again with poet "
                                  "graph --json",
                                  n.name, v, d.name, why));
  };
  const auto expect = [&](const Shape& made) {
    if (made != n.shape)
      throw wrong(fmt::format("its shape is {}, but its inputs make {}", shape_string(n.shape), shape_string(made)));
  };
  if (d.in_place) return expect(g.node(n.inputs.front()).shape);
  const bool pool = n.op == OpKind::MaxPool2d || n.op == OpKind::AvgPool2d || n.op == OpKind::GlobalAvgPool;
  if (!pool && n.op != OpKind::Conv2d && n.op != OpKind::Linear) return;
  std::vector<Shape> inputs;
  for (NodeId u : n.inputs) inputs.push_back(g.node(u).shape);
  const std::int64_t features = n.op == OpKind::Conv2d ? n.shape.at(std::min<std::size_t>(1, n.shape.size() - 1))
                                : n.op == OpKind::Linear ? n.shape.back()
                                                         : 0;
  Shape made;
  try {
    made = apply_rules(n.op, {.inputs = inputs, .attrs = n.attrs, .features = features}).shape;
  } catch (const InputError& e) {
    throw wrong(e.what());
  }
  expect(made);
}

}  // namespace

void check_runnable(const Graph& g, NodeId v) {
  const Node& n = g.node(v);
  auto reject = [&](std::string_view what) {
    throw InputError(fmt::format("node '{}' ({}): the runtime has no kernel for {}; it runs `autodiff` training "
                                 "graphs built from the Faithful models (build the graph with --backward autodiff)",
                                 n.name, v, what));
  };
  switch (n.op) {
    case OpKind::GradInput: {
      const Node& f = g.node(n.grad.node);
      const OpKernels& k = op_kernels(f.op);
      if (!k.input_gradient) reject(fmt::format("the input gradient of op '{}'", op_name(f.op)));
      if (n.grad.slot < 0 || n.grad.slot >= k.gradient_slots)
        reject(fmt::format("the gradient of input slot {} of op '{}'", n.grad.slot, op_name(f.op)));
      // Its kernel reads what the forward node keeps for it, last (autodiff's order).
      if (const auto saved = op_def(f.op).saved; saved && (n.inputs.empty() || g.node(n.inputs.back()).op != saved->op))
        throw InputError(fmt::format("node '{}' ({}): the gradient of op '{}' reads a '{}' node last, which this graph "
                                     "does not give it; rebuild the training graph with this poet's autodiff",
                                     n.name, v, op_name(f.op), op_name(saved->op)));
      return;
    }
    case OpKind::GradParam: {
      const Node& f = g.node(n.grad.node);
      if (!op_kernels(f.op).parameter_gradient)
        reject(fmt::format("the parameter gradient of op '{}'", op_name(f.op)));
      return;
    }
    case OpKind::GradAccumulate:
      if (n.inputs.size() < 2) reject("an accumulation of fewer than two contributions");
      return;
    default: {
      const OpKernels& k = op_kernels(n.op);
      if (!k.forward) reject(fmt::format("op '{}'", op_name(n.op)));
      check_shape_by_rules(g, n, v);
      if (!k.validate) return;
      try {
        k.validate(g, n);
      } catch (const InputError& e) {
        throw InputError(fmt::format("node '{}' ({}): {}", n.name, v, e.what()));
      }
    }
  }
}

std::int64_t scratch_elements(const Graph& g) {
  std::int64_t floats = 0;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) floats = std::max(floats, scratch_elements(g, v));
  return floats;
}

NodeId check_trainable(const Graph& g) {
  g.validate();
  if (!g.has_backward())
    throw InputError(fmt::format("graph '{}' has no backward nodes, so there is nothing to train (a model without "
                                 "parameters, or a graph file of the forward pass only); the runtime runs training "
                                 "steps: give it a model with parameters, or a training graph (--backward autodiff)",
                                 g.name()));
  NodeId input = -1;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    const Node& n = g.node(v);
    if (n.element_bytes != stored_element_bytes(n))
      throw InputError(fmt::format("node '{}' ({}) of op '{}' has {}-byte elements; the runtime computes in fp32 and "
                                   "stores {}-byte elements for this op",
                                   n.name, v, op_name(n.op), n.element_bytes, stored_element_bytes(n)));
    check_runnable(g, v);
    if (n.op != OpKind::Input) continue;
    if (input >= 0)
      throw InputError(fmt::format("graph '{}' has two input nodes, '{}' and '{}'; the runtime feeds one batch "
                                   "tensor, so merge them into one input",
                                   g.name(), g.node(input).name, n.name));
    input = v;
  }
  if (input < 0) throw InputError(fmt::format("graph '{}' has no input node to feed the batch into", g.name()));
  return input;
}

std::int64_t scratch_elements(const Graph& g, NodeId v) {
  const Node& f = g.node(forward_of(g.node(v), v));
  const OpKernels& k = op_kernels(f.op);
  return k.scratch ? k.scratch(g, f) : 0;
}

std::vector<NodeId> batch_norm_owners(const Graph& g) {
  std::vector<NodeId> owner(g.size(), -1);
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    const Node& n = g.node(v);
    if (n.op == OpKind::BatchNorm2d && n.role != Role::Backward) owner[static_cast<std::size_t>(n.inputs.at(1))] = v;
  }
  return owner;
}

void run_node(const Graph& g, NodeId v, std::span<float> out, std::span<const std::span<float>> inputs,
              StepContext& ctx) {
  const Node& n = g.node(v);
  if (n.op == OpKind::GradAccumulate) return accumulate(out, inputs);
  const Inputs in(n, inputs);
  const NodeId fid = forward_of(n, v);
  const Node& f = g.node(fid);
  const KernelCall call{.g = g, .forward_id = fid, .forward = f, .node = n, .in = in, .ctx = ctx};
  const OpKernels& k = op_kernels(f.op);
  switch (n.op) {
    case OpKind::GradInput: {
      POET_CHECK(k.input_gradient, fmt::format("no input-gradient kernel for '{}'", n.name));
      // dY comes first, except for the loss, whose gradient starts the backward pass.
      const std::span<const float> dy = f.role == Role::Loss ? std::span<const float>{} : in.at(0);
      return k.input_gradient(call, dy, out);
    }
    case OpKind::GradParam:
      POET_CHECK(k.parameter_gradient, fmt::format("no parameter-gradient kernel for '{}'", n.name));
      return k.parameter_gradient(call, in.at(0), ctx.parameters->gradient(fid));
    default:
      POET_CHECK(k.forward, fmt::format("no forward kernel for '{}' (check_runnable lets it pass)", n.name));
      return k.forward(call, out);
  }
}

}  // namespace poet::runtime::detail
