// Revolve's abstract reversal laid onto a chain training graph's stages.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <variant>

#include "poet/baselines/forward_part.h"
#include "poet/baselines/revolve.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

// Which backward stages reverse which step of the chain.
struct ChainReversal {
  int steps = 0;                                   // L: the loss is x_L
  std::vector<std::vector<std::size_t>> stages;    // [step]: backward stages, ascending
  std::vector<bool> reads_output;                  // [step]: some stage reads x_step
};

std::string node_name(const Graph& g, NodeId v) { return fmt::format("'{}' ({})", g.node(v).name, v); }

// The chain, or why `g` is not one. A stage belongs to the latest step whose x_{k-1}, x_k
// cover its forward reads; stages reading no forward tensor stay with the current step.
std::variant<ChainReversal, std::string> find_chain_reversal(const Graph& g) {
  const std::size_t forward = forward_part_size(g, "revolve");
  const auto not_a_chain = [&](const std::string& why) {
    return fmt::format("revolve applies to chains only, and graph '{}' is not one: {}; chen_sqrt and chen_greedy "
                       "handle DAGs",
                       g.name(), why);
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
        return fmt::format("revolve needs the backward to reverse the chain step by step, but backward node {} of "
                           "graph '{}' reads forward nodes {} .. {} after the backward reached step {}",
                           node_name(g, static_cast<NodeId>(t)), g.name(), lowest, highest, current);
    }
    current = step;
    chain.stages[step].push_back(t);
    if (highest == step) chain.reads_output[step] = true;
  }
  return chain;
}

Schedule lay_out(const Graph& g, const ChainReversal& chain, const std::vector<RevolveAction>& actions) {
  using K = RevolveAction::Kind;
  const std::size_t forward = static_cast<std::size_t>(chain.steps) + 1;
  Schedule s(g.size(), "revolve");
  for (std::size_t t = 0; t < g.size(); ++t) s.R.set(t, static_cast<NodeId>(t));
  std::vector<bool> held(forward, false), at_hand(forward, false);
  held[0] = true;
  // Recomputations wait here for the next turn that has a stage to run them in: a step
  // whose backward has no node of its own (e.g. a flatten) still takes part in revolve.
  std::set<NodeId> pending;
  bool forward_sweep = true;  // until the first turn the advances are the forward stages themselves
  for (const RevolveAction& a : actions) {
    switch (a.kind) {
      case K::Advance:
        if (!forward_sweep) pending.insert(a.step);
        std::fill(at_hand.begin(), at_hand.end(), false);
        break;
      case K::Store:
        held[a.step] = true;
        break;
      case K::Release:
        held[a.step] = false;
        at_hand[a.step] = true;  // still in RAM until something else is computed
        break;
      case K::Turn: {
        const auto& stages = chain.stages[a.step];
        if (forward_sweep) {
          forward_sweep = false;  // x_L was computed in its own forward stage
        } else if (!stages.empty()) {
          if (chain.reads_output[a.step] && !held[a.step] && !at_hand[a.step]) pending.insert(a.step);
          for (NodeId v : pending) s.R.set(stages.front(), v);
          pending.clear();
        }
        std::fill(at_hand.begin(), at_hand.end(), false);
        at_hand[a.step - 1] = true;
        break;
      }
    }
  }
  fill_ram_by_liveness(s, g);
  return s;
}

}  // namespace

BaselineResult revolve_schedule(const Graph& g, int slots) {
  if (slots < 1) throw InputError(fmt::format("revolve slots {} is not valid: it must be at least 1 (the input)", slots));
  auto chain = find_chain_reversal(g);
  if (auto* why = std::get_if<std::string>(&chain)) return no_schedule(*why);
  const auto& reversal = std::get<ChainReversal>(chain);
  BaselineResult r;
  r.schedule = lay_out(g, reversal, BinomialReversal(reversal.steps, slots).actions(slots));
  r.choice = fmt::format("{} slots", slots);
  return r;
}

BaselineResult revolve_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options) {
  auto chain = find_chain_reversal(g);
  if (auto* why = std::get_if<std::string>(&chain)) return no_schedule(*why);
  if (auto too_small = below_smallest_working_set(g, options)) return no_schedule("revolve: " + *too_small);
  const auto& reversal = std::get<ChainReversal>(chain);
  const BinomialReversal table(reversal.steps, reversal.steps);
  BaselineResult best;
  std::int64_t lowest_peak = INT64_MAX;
  for (int slots = 1; slots <= reversal.steps; ++slots) {
    Schedule s = lay_out(g, reversal, table.actions(slots));
    SimulationResult sim = simulate_baseline(g, costs, s, options);
    lowest_peak = std::min(lowest_peak, sim.peak_bytes);
    if (!fits_budget(sim, options)) continue;
    if (best.simulation && (sim.compute_time_s > best.simulation->compute_time_s ||
                            (sim.compute_time_s == best.simulation->compute_time_s &&
                             sim.peak_bytes >= best.simulation->peak_bytes)))
      continue;
    best.choice = fmt::format("{} slots", slots);
    best.schedule = std::move(s);
    best.simulation = std::move(sim);
  }
  if (!best.found())
    return no_schedule(fmt::format("revolve: the lowest peak over 1 .. {} slots is {}, above the budget {}",
                                   reversal.steps, format_bytes_exact(lowest_peak),
                                   format_bytes_exact(*options.ram_budget_bytes)));
  return best;
}

}  // namespace poet
