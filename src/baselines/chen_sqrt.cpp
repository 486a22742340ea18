#include <fmt/format.h>

#include <cmath>

#include "poet/baselines/articulation.h"
#include "poet/baselines/chen.h"
#include "poet/baselines/forward_part.h"
#include "poet/baselines/segments.h"
#include "poet/util/units.h"

namespace poet {

std::vector<NodeId> chen_sqrt_boundaries(const Graph& g) {
  const std::size_t forward = forward_part_size(g, "chen_sqrt");
  const auto spacing = static_cast<NodeId>(std::ceil(std::sqrt(static_cast<double>(forward))));
  std::vector<NodeId> boundaries;
  NodeId previous = 0;
  for (NodeId v : segment_boundary_candidates(g))
    if (v - previous >= spacing) {
      boundaries.push_back(v);
      previous = v;
    }
  return boundaries;
}

Schedule chen_sqrt_schedule(const Graph& g) { return segment_recompute_schedule(g, chen_sqrt_boundaries(g), "chen_sqrt"); }

BaselineResult chen_sqrt_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options) {
  const auto boundaries = chen_sqrt_boundaries(g);
  Schedule s = segment_recompute_schedule(g, boundaries, "chen_sqrt");
  SimulationResult sim = simulate_baseline(g, costs, s, options);
  const std::string choice = fmt::format("{} segment boundaries", boundaries.size());
  if (!fits_budget(sim, options))
    return no_schedule(fmt::format("chen_sqrt ({}) needs {}, above the budget {}", choice,
                                   format_bytes_exact(sim.peak_bytes), format_bytes_exact(*options.ram_budget_bytes)));
  BaselineResult r;
  r.schedule = std::move(s);
  r.simulation = std::move(sim);
  r.choice = choice;
  return r;
}

}  // namespace poet
