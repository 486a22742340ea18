// Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost": keep only segment
// boundaries in the forward pass and recompute each segment once in the backward
// (segments.h). On DAGs only articulation points may be boundaries, as in Checkmate.
#pragma once

#include <cstdint>
#include <vector>

#include "poet/baselines/baseline_result.h"

namespace poet {

// sqrt(n): with n forward nodes, a boundary at the first candidate at least ceil(sqrt(n))
// forward nodes after the previous boundary (the input counts as the first).
std::vector<NodeId> chen_sqrt_boundaries(const Graph& g);
Schedule chen_sqrt_schedule(const Graph& g);
// The sqrt(n) schedule, or the reason it does not fit options.ram_budget_bytes.
BaselineResult chen_sqrt_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options);

// Chen's memory-aware greedy for one value of its parameter b: walk the forward nodes
// adding up their bytes, and end a segment at the first candidate where the sum exceeds b.
std::vector<NodeId> chen_greedy_boundaries(const Graph& g, std::int64_t b);
// Sweeps b from 0 (every candidate a boundary) to the whole forward pass (no boundary)
// and returns the schedule with the least compute time that fits the budget (ties: the
// lower peak), or the reason none does.
BaselineResult chen_greedy_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options);

}  // namespace poet
