#include "poet/baselines/chain_reversal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "poet/baselines/forward_part.h"

namespace poet {
namespace {

std::string node_name(const Graph& g, NodeId v) { return fmt::format("'{}' ({})", g.node(v).name, v); }

}  // namespace

std::variant<ChainReversal, std::string> find_chain_reversal(const Graph& g, std::string_view method) {
  const std::size_t forward = forward_part_size(g, method);
  const auto not_a_chain = [&](const std::string& why) {
    return fmt::format("{} applies to chains only, and graph '{}' is not one: {}; chen_sqrt, chen_greedy, dtr and "
                       "capuchin handle DAGs",
                       method, g.name(), why);
  };
  if (forward < 2) return not_a_chain("its forward part is the loss alone");
  for (NodeId v = 0; v < static_cast<NodeId>(forward); ++v) {
    const auto& inputs = g.node(v).inputs;
    if (v == 0 && !inputs.empty()) return not_a_chain(fmt::format("the first node {} has inputs", node_name(g, 0)));
    if (v > 0 && inputs.empty()) return not_a_chain(fmt::format("{} is a second input", node_name(g, v)));
    for (NodeId in : inputs)
      if (in != v - 1)
        return not_a_chain(fmt::format("forward node {} reads {}, not only the node before it", node_name(g, v),
                                       node_name(g, in)));
  }
  ChainReversal chain;
  chain.steps = static_cast<int>(forward) - 1;
  chain.stages.resize(forward);
  chain.reads_output.assign(forward, false);
  int current = chain.steps;
  for (std::size_t t = forward; t < g.size(); ++t) {
    int lowest = INT32_MAX, highest = -1;
    for (NodeId f : g.node(static_cast<NodeId>(t)).inputs)
      if (static_cast<std::size_t>(f) < forward) lowest = std::min(lowest, f), highest = std::max(highest, f);
    int step = current;
    if (highest >= 0 && !(lowest >= current - 1 && highest <= current)) {
      step = std::min(lowest + 1, chain.steps);
      if (step >= current || highest > step)
        return fmt::format("{} needs the backward to reverse the chain step by step, but backward node {} of "
                           "graph '{}' reads forward nodes {} .. {} after the backward reached step {}",
                           method, node_name(g, static_cast<NodeId>(t)), g.name(), lowest, highest, current);
    }
    current = step;
    chain.stages[step].push_back(t);
    if (highest == step) chain.reads_output[step] = true;
  }
  return chain;
}

}  // namespace poet
