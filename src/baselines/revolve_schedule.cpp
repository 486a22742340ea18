// Revolve's abstract reversal laid onto a chain training graph's stages.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <variant>

#include "poet/baselines/chain_reversal.h"
#include "poet/baselines/forward_part.h"
#include "poet/baselines/revolve.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

// Revolve advances through every step, but a step whose backward reads only what is kept
// of it (a ReLU's mask) needs no recomputation: drops each recomputation that no later
// stage reads before the node is computed again. From the last stage back, so that what
// only a dropped one read goes too; a node's first computation (in its own stage) stays.
void drop_unread_recomputations(Schedule& s, const Graph& g) {
  std::vector<bool> read_later(g.size(), false);  // a later stage reads v's copy of now
  for (std::size_t t = s.stages; t-- > 0;) {
    const SparseRow row = s.R.row(t);  // a copy: entries are dropped below
    for (auto it = row.rbegin(); it != row.rend(); ++it) {  // a stage computes in index order
      const NodeId v = *it;
      if (!read_later[v] && static_cast<std::size_t>(v) != t) {
        s.R.set(t, v, false);
        continue;
      }
      read_later[v] = false;
      for (NodeId in : g.node(v).inputs) read_later[in] = true;
    }
  }
}

Schedule lay_out(const Graph& g, const ChainReversal& chain, const std::vector<RevolveAction>& actions) {
  using K = RevolveAction::Kind;
  const std::size_t forward = static_cast<std::size_t>(chain.steps) + 1;
  // Every node in its own stage first (what a backward keeps of a step included: the
  // simulator keeps it resident from there until its backward reads it).
  Schedule s(g.size(), "revolve");
  for (std::size_t t = 0; t < g.size(); ++t) s.R.set(t, static_cast<NodeId>(t));
  std::vector<bool> held(forward, false), at_hand(forward, false);
  held[0] = true;
  // Recomputations (steps) wait here for the next turn that has a stage to run them in: a step
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
          for (NodeId step : pending) s.R.set(stages.front(), chain.node[static_cast<std::size_t>(step)]);
          pending.clear();
        }
        std::fill(at_hand.begin(), at_hand.end(), false);
        at_hand[a.step - 1] = true;
        break;
      }
    }
  }
  drop_unread_recomputations(s, g);
  fill_ram_by_liveness(s, g);
  return s;
}

}  // namespace

BaselineResult revolve_schedule(const Graph& g, int slots) {
  if (slots < 1) throw InputError(fmt::format("revolve slots {} is not valid: it must be at least 1 (the input)", slots));
  auto chain = find_chain_reversal(g, "revolve");
  if (auto* why = std::get_if<std::string>(&chain)) return does_not_apply(*why);
  const auto& reversal = std::get<ChainReversal>(chain);
  BaselineResult r;
  r.schedule = lay_out(g, reversal, BinomialReversal(reversal.steps, slots).actions(slots));
  r.choice = fmt::format("{} slots", slots);
  return r;
}

BaselineResult revolve_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options) {
  auto chain = find_chain_reversal(g, "revolve");
  if (auto* why = std::get_if<std::string>(&chain)) return does_not_apply(*why);
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
