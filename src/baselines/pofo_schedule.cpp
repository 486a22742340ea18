// POFO's fates laid onto a chain training graph's stages: Chen's segment recomputation with
// the checkpoints as boundaries, plus the page-out and page-in of each offloaded one.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <variant>

#include "poet/baselines/chain_reversal.h"
#include "poet/baselines/chen.h"
#include "poet/baselines/pofo.h"
#include "poet/baselines/segments.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

// The DP's table has a column per memory unit, so a forward pass spans at most this many.
constexpr std::int64_t kUnitsPerForwardPass = 4096;

std::int64_t units(std::int64_t bytes, std::int64_t unit) { return (bytes + unit - 1) / unit; }

// The greatest common divisor of the sizes when that is fine enough (exact), else a
// coarser unit; sizes round up, so the DP never undercounts.
std::int64_t memory_unit(const Graph& g, const GraphCosts& costs, std::size_t forward) {
  std::int64_t forward_bytes = 0, divisor = 0;
  for (std::size_t v = 0; v < g.size(); ++v) {
    divisor = std::gcd(divisor, costs.nodes[v].bytes);
    if (v < forward) forward_bytes += costs.nodes[v].bytes;
  }
  if (divisor > 0 && forward_bytes / divisor <= kUnitsPerForwardPass) return divisor;
  return std::max<std::int64_t>(1, units(forward_bytes, kUnitsPerForwardPass));
}

PofoChain chain_costs(const Graph& g, const GraphCosts& costs, const ChainReversal& reversal, std::int64_t unit) {
  const int L = reversal.steps;
  const auto forward = static_cast<std::size_t>(reversal.node.back()) + 1;  // the loss is the last forward node
  PofoChain c;
  c.size.assign(L + 1, 0);
  c.forward_s.assign(L + 1, 0);
  c.backward_s.assign(L + 1, 0);
  c.gradient.assign(L + 1, 0);
  c.transfer_s.assign(L + 1, 0);
  c.reads_output = reversal.reads_output;
  for (int k = 0; k <= L; ++k) {
    const NodeCost& n = costs.nodes[static_cast<std::size_t>(reversal.node[static_cast<std::size_t>(k)])];
    c.size[k] = units(n.bytes, unit);
    c.forward_s[k] = k > 0 ? n.compute_time_s : 0;
    c.transfer_s[k] = n.pageout_time_s + n.pagein_time_s;
    for (std::size_t t : reversal.stages[k]) {
      c.backward_s[k] += costs.nodes[t].compute_time_s;
      std::int64_t working = costs.nodes[t].bytes;
      for (NodeId in : g.node(static_cast<NodeId>(t)).inputs)
        if (static_cast<std::size_t>(in) >= forward) working += costs.nodes[in].bytes;
      c.gradient[k] = std::max(c.gradient[k], units(working, unit));
    }
  }
  return c;
}

// What the backward reads of the steps kept: a forward node off the chain (a ReLU's mask, a
// max-pool's indices) made from kept nodes only, smaller than its largest input. Kept, it
// spares the backward recomputing it and holding that input until then; keeping every step
// is then checkpoint-all, where recomputing the masks had peaked above it. (One as large as
// its input, kept beside it, would double what the step holds.)
std::vector<NodeId> kept_off_the_chain(const Graph& g, const ChainReversal& reversal,
                                       const std::vector<PofoFate>& fate) {
  const auto loss = static_cast<std::size_t>(reversal.node.back());
  std::vector<bool> kept(loss + 1, false), read_by_backward(loss + 1, false);
  kept[loss] = true;
  for (std::size_t k = 1; k + 1 < fate.size(); ++k)
    if (fate[k] != PofoFate::Drop) kept[static_cast<std::size_t>(reversal.node[k])] = true;
  for (std::size_t t = loss + 1; t < g.size(); ++t)
    for (NodeId in : g.node(static_cast<NodeId>(t)).inputs)
      if (static_cast<std::size_t>(in) <= loss) read_by_backward[static_cast<std::size_t>(in)] = true;
  std::vector<NodeId> also_kept;
  for (std::size_t v = 0; v < loss; ++v) {
    const Node& n = g.node(static_cast<NodeId>(v));
    if (n.inputs.empty()) kept[v] = true;
    if (kept[v] || !read_by_backward[v]) continue;
    std::int64_t largest_input = 0;
    bool from_kept = true;
    for (NodeId in : n.inputs) {
      from_kept = from_kept && kept[static_cast<std::size_t>(in)];
      largest_input = std::max(largest_input, g.node(in).bytes);
    }
    if (from_kept && n.bytes < largest_input) kept[v] = true, also_kept.push_back(static_cast<NodeId>(v));
  }
  return also_kept;
}

// Step k is node reversal.node[k], computed in the forward stage of that index.
Schedule lay_out(const Graph& g, const ChainReversal& reversal, const std::vector<PofoFate>& fate) {
  const int L = static_cast<int>(fate.size()) - 1;
  std::vector<NodeId> boundaries;
  for (int k = 1; k < L; ++k)
    if (fate[k] != PofoFate::Drop) boundaries.push_back(reversal.node[static_cast<std::size_t>(k)]);
  Schedule s = segment_recompute_schedule(g, boundaries, "pofo", kept_off_the_chain(g, reversal, fate));
  const auto users = g.users();
  const auto loss = static_cast<std::size_t>(reversal.node.back());
  for (int k = 1; k < L; ++k) {
    if (fate[k] != PofoFate::Offload) continue;
    const NodeId c = reversal.node[static_cast<std::size_t>(k)];
    // Its last read in the forward pass: x_{k+1}, or what a backward keeps of the next step
    // (a max-pool's indices), each in its own forward stage.
    std::size_t read = 0;
    for (NodeId u : users[c])
      if (static_cast<std::size_t>(u) <= loss) read = std::max(read, static_cast<std::size_t>(u));
    // The first stage after that which reads it again (a recomputation or a backward node);
    // it is paged in during the stage before. Too close to the forward read and there is
    // nothing to gain: it stays in RAM.
    std::size_t back = s.stages;
    for (std::size_t t = read + 1; t < s.stages && back == s.stages; ++t)
      for (NodeId v : s.R.row(t))
        if (std::find(g.node(v).inputs.begin(), g.node(v).inputs.end(), c) != g.node(v).inputs.end()) back = t;
    if (back == s.stages || back < read + 2) continue;
    s.M_out.set(c, c);
    s.M_in.set(back - 1, c);
    for (std::size_t t = read + 1; t < back; ++t) s.S_ram.set(t, c, false);
    for (std::size_t t = c + 1; t < s.stages; ++t) s.S_aux.set(t, c);
  }
  return s;
}

std::string describe_fates(const std::vector<PofoFate>& fate) {
  int kept = 0, offloaded = 0, dropped = 0;
  for (std::size_t k = 1; k + 1 < fate.size(); ++k)
    ++(fate[k] == PofoFate::Keep ? kept : fate[k] == PofoFate::Offload ? offloaded : dropped);
  return fmt::format("{} kept, {} offloaded, {} recomputed", kept, offloaded, dropped);
}

// The DP's memory model is only near the simulator's, in both directions: it holds some
// activations longer than the laid-out schedule does (on lenet5 its keep-everything choice
// counts 332 KB, the simulator 145 KB), and it leaves out a page-in running during the stage
// before its reader. So the DP's limit is a knob, not the budget: the largest limit whose
// laid-out schedule the simulator fits is searched for by bisection. Too small a limit
// leaves the DP without a choice and too large one overshoots the budget, which is taken to
// hold in that order along the limit.
std::variant<BaselineResult, std::string> fit_budget(const Graph& g, const GraphCosts& costs,
                                                     const SimulationOptions& options, const ChainReversal& reversal,
                                                     const PofoChain& chain, std::int64_t unit) {
  const std::int64_t budget = *options.ram_budget_bytes;
  const auto unlimited = pofo_optimum(chain, std::numeric_limits<std::int64_t>::max() / 4);
  POET_CHECK(unlimited.has_value(), "pofo: no schedule without a memory limit");
  std::optional<BaselineResult> best;  // the largest limit that fits
  std::int64_t fits = -1;              // its limit, or the largest known to leave the DP without a choice
  std::int64_t overshoots = unlimited->evaluation.peak + 1;
  std::int64_t leanest_peak = 0;  // the simulator's peak of the choice that set `overshoots`
  const auto probe = [&](std::int64_t limit) {
    const auto choice = pofo_optimum(chain, limit);
    if (!choice) {
      fits = limit;
      return;
    }
    Schedule s = lay_out(g, reversal, choice->fate);
    SimulationResult sim = simulate_baseline(g, costs, s, options);
    if (!fits_budget(sim, options)) {
      // The same choice is the DP's optimum for every limit down to its own peak.
      overshoots = choice->evaluation.peak;
      leanest_peak = sim.peak_bytes;
      return;
    }
    best = BaselineResult{};
    best->schedule = std::move(s);
    best->simulation = std::move(sim);
    best->choice = fmt::format("{} (DP limit {})", describe_fates(choice->fate), format_bytes_exact(limit * unit));
    fits = limit;
  };
  // The unlimited choice first (a roomy budget's answer), then the budget's own activation
  // room as the model counts it.
  probe(unlimited->evaluation.peak);
  if (!best) {
    const std::int64_t room = (budget - counted_fixed_bytes(g, options)) / unit;
    if (room > fits && room < overshoots) probe(room);
  }
  // To within 1/64 of the limit: a closer limit would add little but DP runs.
  while (overshoots - fits > std::max<std::int64_t>(1, overshoots / 64)) probe(fits + (overshoots - fits) / 2);
  if (best) return std::move(*best);
  return fmt::format("the DP's choices peak above the budget {} in the simulator, the leanest tried (DP limit {}) "
                     "at {}",
                     format_bytes_exact(budget), format_bytes_exact(overshoots * unit),
                     format_bytes_exact(leanest_peak));
}

}  // namespace

BaselineResult pofo_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options) {
  POET_CHECK(costs.nodes.size() == g.size(), "costs belong to another graph");
  auto found = find_chain_reversal(g, "pofo");
  if (auto* why = std::get_if<std::string>(&found)) return does_not_apply(*why);
  if (auto too_small = below_smallest_working_set(g, options)) return no_schedule("pofo: " + *too_small);
  const auto& reversal = std::get<ChainReversal>(found);
  const std::int64_t unit = memory_unit(g, costs, static_cast<std::size_t>(reversal.node.back()) + 1);
  PofoChain chain = chain_costs(g, costs, reversal, unit);

  if (!options.ram_budget_bytes) {
    const auto best = pofo_optimum(chain, std::numeric_limits<std::int64_t>::max() / 4);
    POET_CHECK(best.has_value(), "pofo: no schedule without a memory limit");
    BaselineResult r;
    r.schedule = lay_out(g, reversal, best->fate);
    r.simulation = simulate_baseline(g, costs, *r.schedule, options);
    r.choice = describe_fates(best->fate);
    return r;
  }
  auto with_offloads = fit_budget(g, costs, options, reversal, chain, unit);
  if (auto* r = std::get_if<BaselineResult>(&with_offloads)) return std::move(*r);
  // Offloads the model thought free can still overshoot in the simulator, where the DP's
  // recomputation-only optimum may fit: POFO's space includes it.
  for (double& t : chain.transfer_s) t = std::numeric_limits<double>::infinity();
  auto remat_only = fit_budget(g, costs, options, reversal, chain, unit);
  if (auto* r = std::get_if<BaselineResult>(&remat_only)) {
    r->choice += "; offloading schedules overshot in the simulator";
    return std::move(*r);
  }
  // Chen's segment schedules are in POFO's space (kept boundaries, the segments between them
  // recomputed): where the model misjudged every choice the DP made, the best of them that
  // fits stands in.
  BaselineResult segments = chen_greedy_for_budget(g, costs, options);
  if (segments.found()) {
    segments.schedule->method = "pofo";
    segments.choice = fmt::format("Chen's segments, {}; the DP's own choices overshot in the simulator",
                                  segments.choice);
    return segments;
  }
  const std::string& with = std::get<std::string>(with_offloads);
  const std::string& without = std::get<std::string>(remat_only);
  if (with == without) return no_schedule("pofo: " + with + ", with offloading or without");
  return no_schedule(fmt::format("pofo: {}; without offloading: {}", with, without));
}

}  // namespace poet
