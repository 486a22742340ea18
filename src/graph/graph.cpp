#include "poet/graph/graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zlib.h>

#include <algorithm>
#include <numeric>

#include "poet/graph/op_table.h"
#include "poet/util/error.h"
#include "poet/util/quoting.h"
#include "poet/util/units.h"

namespace poet {

std::int64_t element_count(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::optional<std::int64_t> bounded_element_count(const Shape& shape) {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kMaxTensorBytes / d)) return std::nullopt;
    n = d == 0 ? 0 : n * d;
  }
  return n;
}

std::string shape_string(const Shape& shape) {
  if (shape.empty()) return "scalar";
  return fmt::format("{}", fmt::join(shape, "x"));
}

namespace {

std::string describe(const Graph& g, NodeId id) {
  return fmt::format("'{}' ({})", g.node(id).name, id);
}

}  // namespace

namespace {

// Checks a node's own figures against the limits in graph.h, before any of them is used.
void check_node_figures(const Node& n, const std::string& where) {
  const auto fail = [&](const std::string& what) { throw InputError(fmt::format("{}: {}", where, what)); };
  if (n.element_bytes < 1 || n.element_bytes > kMaxElementBytes)
    fail(fmt::format("element_bytes is {}; it must be 1 to {} (4 for fp32)", n.element_bytes, kMaxElementBytes));
  std::int64_t elements = 1;
  for (const std::int64_t d : n.shape) {
    if (d < 0) fail(fmt::format("shape {} has a negative dimension", fmt::join(n.shape, "x")));
    if (d > 0 && elements > kMaxTensorBytes / n.element_bytes / d)
      fail(fmt::format("shape {} of {}-byte elements holds more than {} (2^48 bytes), beyond any tensor poet plans",
                       fmt::join(n.shape, "x"), n.element_bytes, format_bytes_exact(kMaxTensorBytes)));
    elements = d == 0 ? 0 : elements * d;
  }
  if (n.bytes < 0 || n.bytes > kMaxTensorBytes)
    fail(fmt::format("bytes is {}; it must be 0 to {} (2^48)", n.bytes, format_bytes_exact(kMaxTensorBytes)));
  if (!(n.flops >= 0 && n.flops <= kMaxNodeFlops))
    fail(fmt::format("flops is {}; it must be >= 0 and at most {:g}", n.flops, kMaxNodeFlops));
  if (n.param_count < 0 || n.param_count > kMaxTensorBytes / n.element_bytes)
    fail(fmt::format("param_count is {}; it must be >= 0 and its bytes at most {} (2^48)", n.param_count,
                     format_bytes_exact(kMaxTensorBytes)));
  if (n.inputs.size() > kMaxInputs)
    fail(fmt::format("lists {} inputs; a node may have at most {}", n.inputs.size(), kMaxInputs));
  std::vector<NodeId> sorted = n.inputs;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    if (j - i > static_cast<std::size_t>(kMaxInputRepeats))
      fail(fmt::format("lists input {} {} times; a node may list one input at most {} times (x*x lists it twice)",
                       sorted[i], j - i, kMaxInputRepeats));
    i = j;
  }
}

}  // namespace

void Graph::set_name(std::string name) { name_ = one_line(name); }

NodeId Graph::add(Node node) {
  const auto id = static_cast<NodeId>(nodes_.size());
  node.name = one_line(node.name);
  if (nodes_.size() >= kMaxNodes)
    throw InputError(fmt::format("graph '{}' has more than {} nodes, beyond any graph poet can plan", name_, kMaxNodes));
  check_node_figures(node, fmt::format("graph '{}': node '{}' ({})", name_, node.name, id));
  for (std::size_t slot = 0; slot < node.inputs.size(); ++slot) {
    const NodeId in = node.inputs[slot];
    if (in < 0 || in >= id)
      throw InputError(fmt::format(
          "graph '{}': node '{}' ({}) input {} is node {}, which is not an earlier node; inputs "
          "must refer to nodes listed before it (execution order)",
          name_, node.name, id, slot, in));
  }
  if (node.bytes == 0 && node.op != OpKind::GradParam)
    node.bytes = element_count(node.shape) * node.element_bytes;
  nodes_.push_back(std::move(node));
  return id;
}

const Node& Graph::node(NodeId id) const {
  POET_CHECK(id >= 0 && static_cast<std::size_t>(id) < nodes_.size(),
             fmt::format("node id {} out of range [0, {})", id, nodes_.size()));
  return nodes_[static_cast<std::size_t>(id)];
}

void Graph::validate() const {
  const auto where = [&](NodeId id) { return fmt::format("graph '{}': node {}", name_, describe(*this, id)); };
  int losses = 0;
  // Parameters, gradients and Adam's two moments: the most fixed memory any accounting counts.
  constexpr std::int64_t kFixedCopies = 4;
  std::int64_t total_bytes = 0;
  for (NodeId id = 0; id < static_cast<NodeId>(nodes_.size()); ++id) {
    const Node& n = nodes_[static_cast<std::size_t>(id)];
    if (n.name.empty()) throw InputError(fmt::format("graph '{}': node {} has no name", name_, id));
    for (std::size_t slot = 0; slot < n.inputs.size(); ++slot) {
      const NodeId in = n.inputs[slot];
      if (in < 0 || in >= static_cast<NodeId>(nodes_.size()))
        throw InputError(fmt::format("{}: input {} refers to node {}, out of range [0, {})", where(id), slot,
                                     in, nodes_.size()));
      if (in >= id)
        throw InputError(fmt::format("{} uses {}, which does not come before it; nodes must be listed "
                                     "in execution (topological) order",
                                     where(id), describe(*this, in)));
    }
    // Each addend is at most 2^48 (add() checked), so the sum cannot overflow before the check.
    total_bytes += n.bytes + (n.role == Role::Backward ? 0 : kFixedCopies * n.param_count * n.element_bytes);
    if (total_bytes > kMaxGraphBytes)
      throw InputError(fmt::format("graph '{}': its tensors and parameters (with gradients and Adam's state) pass {} "
                                   "(2^52 bytes) at node {}, beyond any graph poet plans; check the sizes",
                                   name_, format_bytes_exact(kMaxGraphBytes), describe(*this, id)));
    if (n.role == Role::Loss) ++losses;
    if (n.role == Role::Backward && n.op != OpKind::ChainGradient && n.op != OpKind::GradAccumulate) {
      if (n.grad.node < 0)  // a file's backward node without its "grad"
        throw InputError(fmt::format("{}: a backward node says which node it differentiates (\"grad\": {{\"node\": "
                                     "N, \"slot\": S}}); this one does not",
                                     where(id)));
      if (n.grad.node >= id)
        throw InputError(fmt::format("{}: differentiates node {}, which is not an earlier node", where(id), n.grad.node));
      const Node& target = nodes_[static_cast<std::size_t>(n.grad.node)];
      if (target.role == Role::Backward)
        throw InputError(fmt::format("{}: differentiates {}, which is itself a backward node", where(id),
                                     describe(*this, n.grad.node)));
      if (n.grad.slot != GradOf::kParams &&
          (n.grad.slot < 0 || static_cast<std::size_t>(n.grad.slot) >= target.inputs.size()))
        throw InputError(fmt::format("{}: gradient of input slot {} of {}, which has {} inputs", where(id),
                                     n.grad.slot, describe(*this, n.grad.node), target.inputs.size()));
    }
  }
  if (losses != 1)
    throw InputError(fmt::format("graph '{}' has {} loss nodes; a training graph needs exactly one", name_, losses));
}

NodeId Graph::loss() const {
  for (NodeId id = 0; id < static_cast<NodeId>(nodes_.size()); ++id)
    if (nodes_[static_cast<std::size_t>(id)].role == Role::Loss) return id;
  throw InputError(fmt::format("graph '{}' has no loss node", name_));
}

std::size_t Graph::edge_count() const {
  std::size_t edges = 0;
  for (const auto& n : nodes_) edges += n.inputs.size();
  return edges;
}

std::uint32_t Graph::structure_checksum() const {
  // Of names ("conv2d forward 0,3"), not enum values: a checksum a file keeps must not change
  // when an operator is added to the enum, nor with the machine's byte order.
  std::string text;
  for (const auto& n : nodes_)
    text += fmt::format("{} {} {}\n", op_name(n.op), role_name(n.role), fmt::join(n.inputs, ","));
  return static_cast<std::uint32_t>(::crc32_z(0L, reinterpret_cast<const Bytef*>(text.data()), text.size()));
}

std::string Graph::structure_checksum_text() const { return fmt::format("{:08x}", structure_checksum()); }

std::vector<std::vector<NodeId>> Graph::users() const {
  std::vector<std::vector<NodeId>> users(nodes_.size());
  for (NodeId id = 0; id < static_cast<NodeId>(nodes_.size()); ++id)
    for (NodeId in : nodes_[static_cast<std::size_t>(id)].inputs) users[static_cast<std::size_t>(in)].push_back(id);
  return users;
}

bool Graph::has_backward() const {
  for (const auto& n : nodes_)
    if (n.role == Role::Backward) return true;
  return false;
}

FixedMemory Graph::fixed_memory(Optimizer optimizer) const {
  FixedMemory m;
  for (const auto& n : nodes_) {
    if (n.role == Role::Backward) continue;
    m.parameter_bytes += n.param_count * n.element_bytes;
    m.gradient_bytes += trainable_parameters(n) * n.element_bytes;  // running statistics have none
  }
  // State per trained parameter: none for SGD, a velocity for momentum, two moments for Adam.
  const int states = optimizer == Optimizer::SGD ? 0 : optimizer == Optimizer::Momentum ? 1 : 2;
  m.optimizer_state_bytes = states * m.gradient_bytes;
  return m;
}

std::int64_t Graph::forward_activation_bytes() const {
  std::int64_t bytes = 0;
  for (const auto& n : nodes_)
    if (n.role != Role::Backward) bytes += n.bytes;
  return bytes;
}

double Graph::total_flops() const {
  return std::accumulate(nodes_.begin(), nodes_.end(), 0.0,
                         [](double acc, const Node& n) { return acc + n.flops; });
}

Graph::Footprint Graph::largest_footprint() const {
  Footprint largest;
  for (NodeId v = 0; v < static_cast<NodeId>(nodes_.size()); ++v) {
    std::vector<NodeId> inputs = node(v).inputs;
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    std::int64_t bytes = node(v).bytes;
    for (NodeId in : inputs) bytes += node(in).bytes;
    if (const auto over = in_place_input(*this, v)) bytes -= node(*over).bytes;  // the output takes its bytes
    if (bytes > largest.bytes) largest = {v, bytes};
  }
  return largest;
}

}  // namespace poet
