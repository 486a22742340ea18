// Pictures people read more than tables: a schedule drawn as the paper's Figure 2, and the
// memory timeline of a simulated plan against the budget. Plain SVG text, no library: open
// it in a browser (hovering a cell names the event) or convert it with `rsvg-convert`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "poet/graph/graph.h"
#include "poet/schedule/schedule.h"
#include "poet/simulate/simulator.h"

namespace poet {

struct ScheduleSvgOptions {
  std::string title;          // empty: "<graph>: <method> schedule"
  double grid_width_px = 1100;  // cells shrink or grow so the grid is about this wide...
  double max_cell_px = 28;      // ...but no cell is larger than this
};

// Stages (time steps) top to bottom, nodes (layers) left to right, in execution order.
// Each event is a cell: compute (R[t][t]), recompute (R[t][i], i < t), page-out (M_out),
// page-in (M_in); a cell holding two events is split between them. Residency in RAM (S_RAM)
// and on storage (S_AUX) are faint bars, one rectangle per contiguous run of stages, so
// lifetimes show and a 400-node schedule stays a few hundred KB. Event cells carry
// class="compute|recompute|pageout|pagein" and a <title> tooltip ("stage 12: recompute
// 'relu3' (7)"); the legend counts each kind. A dashed line after the loss node separates
// the forward and backward regions. Tick labels thin out so they never collide.
// Throws InputError (via check_schedule_shape) when the schedule does not fit the graph.
std::string schedule_svg(const Graph& g, const Schedule& s, const ScheduleSvgOptions& options = {});

enum class MemoryAxis {
  Time,   // seconds of the simulated step (compute and overlapped paging)
  Event,  // memory events in the order the simulator applies them: cheap nodes get room too
};

struct MemorySvgOptions {
  std::string title;  // empty: "memory over one training step"
  MemoryAxis x_axis = MemoryAxis::Time;
  double width_px = 1000, height_px = 460;
};

// Fixed memory as a grey band at the bottom, activations stacked on it as a step plot
// (fixed + activation bytes after each event of r.timeline). The budget is a dashed line
// labelled "budget 2.34 MiB"; whatever lies above it is shaded red; the peak is marked
// "peak 2.10 MiB". The y axis is in binary units (format_bytes); when fixed memory dwarfs
// the activations it starts above zero (marked by a break on the axis) so they stay legible.
std::string memory_svg(const SimulationResult& r, std::optional<std::int64_t> budget_bytes,
                       const MemorySvgOptions& options = {});

// The same, titled "<graph>: memory over one training step".
std::string memory_svg(const Graph& g, const SimulationResult& r, std::optional<std::int64_t> budget_bytes);

}  // namespace poet
