// Pictures people read more than tables: a schedule drawn as the paper's Figure 2, and the
// memory timeline of a simulated plan against the budget. Plain SVG text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "poet/graph/graph.h"
#include "poet/schedule/schedule.h"
#include "poet/simulate/simulator.h"

namespace poet {

// Stages (time steps) top to bottom, nodes (layers) left to right. Each event is a cell:
// compute, recompute, page-out, page-in; resident-in-RAM and on-storage runs are faint
// bars so lifetimes show. Hovering a cell names the event. Readable up to a few hundred
// nodes: cells shrink to fit about 1100 px, and axis labels thin out.
std::string schedule_svg(const Graph& g, const Schedule& s);

// Fixed memory plus activations over time as a step plot, with the budget as a dashed
// line and the peak marked.
std::string memory_svg(const Graph& g, const SimulationResult& r, std::optional<std::int64_t> budget_bytes);

}  // namespace poet
