#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "poet/baselines/articulation.h"
#include "poet/baselines/chen.h"
#include "poet/baselines/forward_part.h"
#include "poet/baselines/segments.h"
#include "poet/util/units.h"

namespace poet {
namespace {

// Values of b to try: 0, a geometric grid from the smallest to the largest forward
// tensor's bytes and on to the whole forward pass, and the whole forward pass itself.
// Only the boundary sets matter, so the grid need not be fine: neighbours mostly agree.
std::vector<std::int64_t> budget_parameters(const Graph& g, std::size_t forward) {
  std::int64_t smallest = INT64_MAX, total = 0;
  for (NodeId v = 0; v < static_cast<NodeId>(forward); ++v) {
    smallest = std::min(smallest, std::max<std::int64_t>(1, g.node(v).bytes));
    total += g.node(v).bytes;
  }
  std::vector<std::int64_t> values{0, total};
  constexpr int kSteps = 96;
  const double ratio = std::pow(static_cast<double>(std::max(total, smallest)) / static_cast<double>(smallest),
                                1.0 / kSteps);
  double b = static_cast<double>(smallest);
  for (int i = 0; i < kSteps; ++i, b *= ratio) values.push_back(static_cast<std::int64_t>(b));
  return values;
}

bool better(const SimulationResult& a, const SimulationResult& b) {
  if (a.compute_time_s != b.compute_time_s) return a.compute_time_s < b.compute_time_s;
  return a.peak_bytes < b.peak_bytes;
}

}  // namespace

std::vector<NodeId> chen_greedy_boundaries(const Graph& g, std::int64_t b) {
  const std::size_t forward = forward_part_size(g, "chen_greedy");
  const auto candidates = segment_boundary_candidates(g);
  std::vector<NodeId> boundaries;
  std::int64_t running = 0;
  std::size_t next_candidate = 0;
  for (NodeId v = 0; v < static_cast<NodeId>(forward); ++v) {
    running += g.node(v).bytes;
    const bool candidate = next_candidate < candidates.size() && candidates[next_candidate] == v;
    if (candidate) ++next_candidate;
    if (candidate && running > b) {
      boundaries.push_back(v);
      running = 0;
    }
  }
  return boundaries;
}

BaselineResult chen_greedy_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options) {
  const std::size_t forward = forward_part_size(g, "chen_greedy");
  if (auto too_small = below_smallest_working_set(g, options)) return no_schedule("chen_greedy: " + *too_small);

  BaselineResult best;
  std::optional<std::int64_t> lowest_peak;
  std::set<std::vector<NodeId>> tried;
  for (std::int64_t b : budget_parameters(g, forward)) {
    auto boundaries = chen_greedy_boundaries(g, b);
    if (!tried.insert(boundaries).second) continue;
    Schedule s = segment_recompute_schedule(g, boundaries, "chen_greedy");
    SimulationResult sim = simulate_baseline(g, costs, s, options);
    if (!lowest_peak || sim.peak_bytes < *lowest_peak) lowest_peak = sim.peak_bytes;
    if (!fits_budget(sim, options) || (best.simulation && !better(sim, *best.simulation))) continue;
    best.choice = fmt::format("b = {}: {} segment boundaries", format_bytes_exact(b), boundaries.size());
    best.schedule = std::move(s);
    best.simulation = std::move(sim);
  }
  if (!best.found())
    return no_schedule(fmt::format("chen_greedy: the lowest peak over {} boundary choices is {}, above the budget {}",
                                   tried.size(), format_bytes_exact(*lowest_peak),
                                   format_bytes_exact(*options.ram_budget_bytes)));
  return best;
}

}  // namespace poet
