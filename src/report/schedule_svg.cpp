#include <algorithm>
#include <array>

#include "poet/report/svg.h"
#include "svg_writer.h"

namespace poet {
namespace {

struct EventStyle {
  const char* css_class;
  const char* label;
  const char* color;
};

constexpr EventStyle kCompute{"compute", "compute", "#1f4e99"};
constexpr EventStyle kRecompute{"recompute", "recompute", "#d62728"};
constexpr EventStyle kPageOut{"pageout", "page-out", "#2ca02c"};
constexpr EventStyle kPageIn{"pagein", "page-in", "#9467bd"};
constexpr const char* kInRam = "#c6dbef";
constexpr const char* kOnStorage = "#fdd9a8";

}  // namespace

std::string schedule_svg(const Graph& g, const Schedule& s) {
  using report::Svg;
  const auto n = static_cast<double>(std::max<std::size_t>(s.stages, 1));
  const double cell = std::clamp(1100.0 / n, 1.0, 14.0);
  const double left = 70, top = 70, grid = cell * n;
  const double width = left + grid + 220, height = top + grid + 60;
  Svg svg(width, height);

  std::size_t forward = 0;
  while (forward < g.size() && g.node(static_cast<NodeId>(forward)).role != Role::Loss) ++forward;

  svg.text(left, 24, fmt::format("{}: {} schedule, {} nodes", g.name(), s.method.empty() ? "a" : s.method, s.stages),
           16, "start", "font-weight=\"bold\"");
  svg.text(left + grid / 2, top - 28, "node (layer), in execution order", 12, "middle");
  svg.text(18, top + grid / 2, "stage (time step)", 12, "middle",
           fmt::format("transform=\"rotate(-90 18 {:.1f})\"", top + grid / 2));
  svg.rect(left, top, grid, grid, "#fafafa");

  // Residency as runs, one rectangle per contiguous run of stages: lifetimes at a glance
  // and a file that stays small for large graphs.
  const auto runs = [&](const SparseMatrix& m, const char* color, const char* what) {
    for (NodeId i = 0; i < static_cast<NodeId>(s.stages); ++i) {
      std::size_t t = 0;
      while (t < s.stages) {
        if (!m.get(t, i)) {
          ++t;
          continue;
        }
        const std::size_t from = t;
        while (t < s.stages && m.get(t, i)) ++t;
        svg.rect(left + i * cell, top + static_cast<double>(from) * cell, cell, static_cast<double>(t - from) * cell,
                 color, "",
                 fmt::format("'{}' ({}) {} in stages {}-{}", g.node(i).name, i, what, from, t - 1));
      }
    }
  };
  runs(s.S_ram, kInRam, "in RAM");
  runs(s.S_aux, kOnStorage, "on storage");

  std::array<std::size_t, 4> counts{};
  const auto event = [&](std::size_t t, NodeId i, const EventStyle& style, std::size_t& count) {
    ++count;
    svg.rect(left + i * cell, top + static_cast<double>(t) * cell, cell, cell, style.color, style.css_class,
             fmt::format("stage {}: {} '{}' ({})", t, style.label, g.node(i).name, i));
  };
  for (std::size_t t = 0; t < s.stages; ++t) {
    for (NodeId i : s.R.row(t)) event(t, i, static_cast<std::size_t>(i) == t ? kCompute : kRecompute, counts[static_cast<std::size_t>(i) == t ? 0 : 1]);
    for (NodeId i : s.M_out.row(t)) event(t, i, kPageOut, counts[2]);
    for (NodeId i : s.M_in.row(t)) event(t, i, kPageIn, counts[3]);
  }

  // Ticks that never crowd: about ten per axis, on round numbers.
  const auto step = std::max<std::size_t>(1, static_cast<std::size_t>(report::nice_step(n, 10)));
  for (std::size_t k = 0; k < s.stages; k += step) {
    const double at = (static_cast<double>(k) + 0.5) * cell;
    svg.text(left + at, top - 8, std::to_string(k), 10, "middle");
    svg.text(left - 6, top + at + 3, std::to_string(k), 10, "end");
  }
  if (forward < g.size()) {
    const double x = left + static_cast<double>(forward + 1) * cell;
    svg.line(x, top - 4, x, top + grid, "#555", 1, "4 3");
    svg.text(x - 4, top + grid + 16, "forward", 11, "end");
    svg.text(x + 4, top + grid + 16, "backward", 11, "start");
  }

  const double lx = left + grid + 24;
  const std::array<std::pair<const EventStyle*, std::size_t>, 4> legend{
      {{&kCompute, counts[0]}, {&kRecompute, counts[1]}, {&kPageOut, counts[2]}, {&kPageIn, counts[3]}}};
  double ly = top;
  for (const auto& [style, count] : legend) {
    svg.rect(lx, ly, 12, 12, style->color);
    svg.text(lx + 18, ly + 10, fmt::format("{}: {}", style->label, count), 12);
    ly += 20;
  }
  svg.rect(lx, ly, 12, 12, kInRam);
  svg.text(lx + 18, ly + 10, "in RAM", 12);
  svg.rect(lx, ly + 20, 12, 12, kOnStorage);
  svg.text(lx + 18, ly + 30, "on storage", 12);
  return svg.finish();
}

}  // namespace poet
