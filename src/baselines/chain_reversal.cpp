#include "poet/baselines/chain_reversal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "poet/baselines/forward_part.h"
#include "poet/graph/op_table.h"

namespace poet {
namespace {

std::string node_name(const Graph& g, NodeId v) { return fmt::format("'{}' ({})", g.node(v).name, v); }

// A node that keeps something of a step for its backward (a ReLU's mask, a max-pool's indices).
bool saved_for_backward(OpKind op) {
  for (const OpDef& d : op_table())
    if (d.saved && d.saved->op == op) return true;
  return false;
}

// A norm's statistics node (batch, layer, group norm), which reads the step before its norm.
bool is_statistics(OpKind op) {
  for (const OpDef& d : op_table())
    if (d.statistics == op) return true;
  return false;
}

}  // namespace

std::variant<ChainReversal, std::string> find_chain_reversal(const Graph& g, std::string_view method) {
  const std::size_t forward = forward_part_size(g, method);
  const auto not_a_chain = [&](const std::string& why) {
    return fmt::format("{} applies to chains only, and graph '{}' is not one: {}; chen_sqrt, chen_greedy, dtr and "
                       "capuchin handle DAGs",
                       method, g.name(), why);
  };
  ChainReversal chain;
  std::vector<int> step_of(forward, -1);  // a chain node's step; -1 for what a backward keeps
  std::vector<bool> statistics(forward, false);  // a side node of the step after it (see below)
  const auto users = g.users();
  const auto read_by_backward_only = [&](NodeId v) {
    return std::all_of(users[v].begin(), users[v].end(), [&](NodeId u) { return u >= static_cast<NodeId>(forward); });
  };
  for (NodeId v = 0; v < static_cast<NodeId>(forward); ++v) {
    const auto& inputs = g.node(v).inputs;
    if (saved_for_backward(g.node(v).op) && inputs.size() == 1 && step_of[inputs[0]] >= 0 && read_by_backward_only(v))
      continue;
    const NodeId previous = chain.node.empty() ? -1 : chain.node.back();
    // A norm's statistics read the step before the norm, and the norm reads both: the norm
    // is the step, its statistics computed with it and kept, as a mask is, for the
    // recomputations of the norm and its backward (a small [groups, 2] tensor).
    if (is_statistics(g.node(v).op) && inputs.size() == 1 && inputs[0] == previous &&
        std::all_of(users[v].begin(), users[v].end(),
                    [&](NodeId u) { return u == v + 1 || u >= static_cast<NodeId>(forward); })) {
      statistics[v] = true;
      continue;
    }
    if (v == 0 && !inputs.empty()) return not_a_chain(fmt::format("the first node {} has inputs", node_name(g, 0)));
    if (v > 0 && inputs.empty()) return not_a_chain(fmt::format("{} is a second input", node_name(g, v)));
    // The input may be read again further on (an autoencoder's loss reads it as its target):
    // it is the chain's first node, which the reversal never drops, held until that read.
    const auto the_input = [&](NodeId in) {
      return !chain.node.empty() && in == chain.node.front() && g.node(in).op == OpKind::Input;
    };
    for (NodeId in : inputs)
      if (in != previous && !(statistics[in] && in == v - 1) && !the_input(in))
        return not_a_chain(fmt::format("forward node {} reads {}, not only the node before it", node_name(g, v),
                                       node_name(g, in)));
    step_of[v] = static_cast<int>(chain.node.size());
    chain.node.push_back(v);
  }
  if (chain.node.size() < 2) return not_a_chain("its forward part is the loss alone");
  chain.steps = static_cast<int>(chain.node.size()) - 1;
  chain.stages.resize(chain.node.size());
  chain.reads_output.assign(chain.node.size(), false);
  int current = chain.steps;
  for (std::size_t t = forward; t < g.size(); ++t) {
    int lowest = INT32_MAX, highest = -1;
    for (NodeId f : g.node(static_cast<NodeId>(t)).inputs)
      if (static_cast<std::size_t>(f) < forward && step_of[f] >= 0)
        lowest = std::min(lowest, step_of[f]), highest = std::max(highest, step_of[f]);
    int step = current;
    if (highest >= 0 && !(lowest >= current - 1 && highest <= current)) {
      step = std::min(lowest + 1, chain.steps);
      if (step >= current || highest > step)
        return fmt::format("{} needs the backward to reverse the chain step by step, but backward node {} of "
                           "graph '{}' reads forward steps {} .. {} after the backward reached step {}",
                           method, node_name(g, static_cast<NodeId>(t)), g.name(), lowest, highest, current);
    }
    current = step;
    chain.stages[step].push_back(t);
    if (highest == step) chain.reads_output[step] = true;
  }
  return chain;
}

}  // namespace poet
