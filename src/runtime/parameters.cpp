#include "poet/runtime/parameters.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "op_kernels.h"
#include "poet/graph/op_table.h"
#include "poet/kernels/rng.h"
#include "poet/util/error.h"

namespace poet::runtime {

using namespace kernels;  // the kernels this module binds to operators
namespace {

// The RNG's step word for initial values: no training step reaches it, so initial values
// never share bits with a dropout mask.
constexpr std::uint64_t kInitialisationStream = ~std::uint64_t{0};

// The layout the operator's kernels expect (op_kernels.h).
detail::ParameterLayout layout_of(const Graph& g, const Node& n) {
  const auto layout = detail::op_kernels(n.op).parameters;
  if (!layout) {
    std::string owners;
    for (const OpDef& d : op_table())
      if (detail::op_kernels(d.op).parameters) owners += fmt::format("{}{}", owners.empty() ? "" : ", ", d.name);
    throw InputError(fmt::format("node '{}' ({}) has {} parameters, but the runtime knows no parameter layout for "
                                 "op '{}'; only {} may own parameters",
                                 n.name, op_name(n.op), n.param_count, op_name(n.op), owners));
  }
  return layout(g, n);
}

float uniform_sign(std::uint32_t bits) {  // [-1, 1)
  return static_cast<float>(bits >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

}  // namespace

ParameterStore::ParameterStore(const Graph& g, int state_per_parameter, std::uint64_t seed)
    : graph_(g), state_per_parameter_(state_per_parameter), slice_of_node_(g.size(), -1) {
  std::int64_t total = 0, trained = 0;
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    const Node& n = g.node(v);
    if (n.role == Role::Backward || n.param_count == 0) continue;
    const detail::ParameterLayout l = layout_of(g, n);
    if (l.count != n.param_count)
      throw InputError(
          fmt::format("node '{}' ({}): param_count is {} but a {} of this shape has {}; fix the "
                      "graph's param_count",
                      n.name, v, n.param_count, op_name(n.op), l.count));
    POET_CHECK(l.trainable == trainable_parameters(n), fmt::format("node '{}': its kernels and its operator "
                                                                    "disagree on what it trains", n.name));
    slice_of_node_[v] = static_cast<std::int32_t>(slices_.size());
    slices_.push_back({v, total, n.param_count, l.trainable, trained});
    total += n.param_count;
    trained += l.trainable;
  }
  values_.assign(static_cast<std::size_t>(total), 0.0f);
  gradients_.assign(static_cast<std::size_t>(trained), 0.0f);
  state_.assign(static_cast<std::size_t>(trained) * static_cast<std::size_t>(state_per_parameter), 0.0f);
  initialize(seed);
}

void ParameterStore::initialize(std::uint64_t seed) {
  for (const ParameterSlice& s : slices_) {
    const Node& n = graph_.node(s.node);
    const detail::ParameterLayout l = layout_of(graph_, n);
    std::span<float> p = values(s.node);
    std::fill(p.begin(), p.end(), l.fill);
    const RandomKey key{seed, kInitialisationStream, static_cast<std::uint32_t>(s.node)};
    for (std::int64_t i = 0; i < l.weights; ++i)
      p[static_cast<std::size_t>(i)] = l.bound * uniform_sign(random_bits(key, static_cast<std::uint64_t>(i)));
    for (const auto& ones : l.ones) std::fill_n(p.begin() + ones.begin, ones.length, 1.0f);
  }
  std::fill(gradients_.begin(), gradients_.end(), 0.0f);
  std::fill(state_.begin(), state_.end(), 0.0f);
}

std::int32_t ParameterStore::slice_index(NodeId node) const {
  if (node < 0 || static_cast<std::size_t>(node) >= slice_of_node_.size()) return -1;
  return slice_of_node_[static_cast<std::size_t>(node)];
}

const ParameterSlice& ParameterStore::slice(NodeId node) const {
  const std::int32_t i = slice_index(node);
  POET_CHECK(i >= 0, fmt::format("node {} owns no parameters", node));
  return slices_[static_cast<std::size_t>(i)];
}

std::span<float> ParameterStore::values(NodeId node) {
  const ParameterSlice& s = slice(node);
  return std::span<float>(values_).subspan(static_cast<std::size_t>(s.offset), static_cast<std::size_t>(s.count));
}

std::span<const float> ParameterStore::values(NodeId node) const {
  const ParameterSlice& s = slice(node);
  return std::span<const float>(values_).subspan(static_cast<std::size_t>(s.offset), static_cast<std::size_t>(s.count));
}

std::span<float> ParameterStore::gradient(NodeId node) {
  const ParameterSlice& s = slice(node);
  return std::span<float>(gradients_)
      .subspan(static_cast<std::size_t>(s.trained_offset), static_cast<std::size_t>(s.trainable));
}

FixedMemory ParameterStore::bytes() const {
  FixedMemory m;
  m.parameter_bytes = static_cast<std::int64_t>(values_.size() * sizeof(float));
  m.gradient_bytes = static_cast<std::int64_t>(gradients_.size() * sizeof(float));
  m.optimizer_state_bytes = static_cast<std::int64_t>(state_.size() * sizeof(float));
  return m;
}

}  // namespace poet::runtime
