// The paper's Figure 2: what happens to each node in each stage.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "poet/report/svg.h"
#include "svg_writer.h"

namespace poet {
namespace {

struct EventStyle {
  const char* css_class;  // what the tests and style sheets select on
  const char* label;
  const char* color;
};

// Saturated colors for events, pale ones for residency, so events stand out on lifetimes.
constexpr EventStyle kCompute{"compute", "compute", "#1f4e99"};
constexpr EventStyle kRecompute{"recompute", "recompute", "#e0301e"};
constexpr EventStyle kPageOut{"pageout", "page-out", "#2ca02c"};
constexpr EventStyle kPageIn{"pagein", "page-in", "#9a4fd0"};
constexpr const char* kInRam = "#bcd4ec";
constexpr const char* kOnStorage = "#fcd49a";
constexpr const char* kForwardBackground = "#fcfcfc";
constexpr const char* kBackwardBackground = "#f3f5f9";

// Names under the grid, only when cells are wide enough to hold a rotated label.
constexpr double kMinCellForNames = 9;
constexpr std::size_t kMaxNameChars = 18;
constexpr double kMinMark = 4;

// Index of the first node after the loss: where the backward region starts (size() if none).
std::size_t backward_start(const Graph& g) {
  for (std::size_t i = 0; i < g.size(); ++i)
    if (g.node(static_cast<NodeId>(i)).role == Role::Loss) return i + 1;
  return g.size();
}

std::string short_name(const std::string& name) {
  return name.size() <= kMaxNameChars ? name : name.substr(0, kMaxNameChars - 1) + "~";
}

}  // namespace

std::string schedule_svg(const Graph& g, const Schedule& s, const ScheduleSvgOptions& options) {
  using report::Svg;
  check_schedule_shape(s, g);
  const std::size_t n = s.stages;
  const double nd = static_cast<double>(std::max<std::size_t>(n, 1));
  const double cell = std::clamp(options.grid_width_px / nd, 1.0, options.max_cell_px);
  const double grid = cell * nd;
  const bool names = cell >= kMinCellForNames;
  const double name_room = names ? 6.5 * static_cast<double>(kMaxNameChars) * 0.8 : 0;
  const double left = 80, top = 100, legend_w = 250;
  const double width = std::max(left + grid + legend_w, 700.0);
  const double height = std::max(top + grid + 50 + name_room, top + 300);
  Svg svg(width, height);

  const std::string method = s.method.empty() ? "unnamed" : s.method;
  const std::string title = options.title.empty() ? fmt::format("{}: {} schedule", g.name(), method) : options.title;
  svg.text(left, 26, title, 17, "start", "font-weight=\"bold\"");
  svg.text(left, 46,
           fmt::format("{} nodes; row t: what happens during stage t; column i: the life of node i's tensor", n), 12,
           "start", "fill=\"#555\"");

  const auto x_of = [&](std::size_t i) { return left + static_cast<double>(i) * cell; };
  const auto y_of = [&](std::size_t t) { return top + static_cast<double>(t) * cell; };
  const auto node_label = [&](NodeId i) { return fmt::format("'{}' ({})", g.node(i).name, i); };

  // Background: the backward region tinted, so the two passes read apart.
  const std::size_t split = backward_start(g);
  svg.rect(left, top, x_of(split) - left, grid, kForwardBackground);
  if (split < n) svg.rect(x_of(split), top, x_of(n) - x_of(split), grid, kBackwardBackground);

  // Ticks on round numbers (1, 2, 5 x 10^k), spaced by more than the widest label (about
  // 9 px a digit at 10 px) so labels never collide.
  const double min_tick_gap = 12 + 9 * static_cast<double>(std::to_string(std::max<std::size_t>(n, 1) - 1).size());
  std::size_t step = 1;
  for (std::size_t m = 1; static_cast<double>(step) * cell < min_tick_gap; m *= 10)
    for (const std::size_t f : {1, 2, 5, 10})
      if (static_cast<double>(step = f * m) * cell >= min_tick_gap) break;
  for (std::size_t k = 0; k < n; k += step) {
    const double at = (static_cast<double>(k) + 0.5) * cell;
    if (k > 0) {
      svg.line(left + at, top, left + at, top + grid, "#e6e6e6", 0.6);
      svg.line(left, top + at, left + grid, top + at, "#e6e6e6", 0.6);
    }
    svg.line(left + at, top - 4, left + at, top, "#333");
    svg.text(left + at, top - 8, std::to_string(k), 10, "middle");
    svg.line(left - 4, top + at, left, top + at, "#333");
    svg.text(left - 7, top + at + 3.5, std::to_string(k), 10, "end");
  }
  svg.text(left + grid / 2, top - 24, "node (layer), in execution order", 12, "middle");
  svg.text(24, top + grid / 2, "stage (time step) \u2192", 12, "middle",
           fmt::format("transform=\"rotate(-90 24 {:.1f})\"", top + grid / 2));

  // Residency as runs, one rectangle per contiguous run of stages: lifetimes at a glance,
  // and a file that stays small for large graphs. Cost: O(set entries), plus one scan of the
  // columns per matrix. Runs are a little narrower than their column so neighbouring
  // lifetimes stay apart.
  const double inset = cell >= 3 ? 0.12 * cell : 0;
  const auto runs = [&](const SparseMatrix& m, const char* color, const char* what) {
    std::vector<std::vector<std::size_t>> stages_of(n);  // column view of the sparse rows
    for (std::size_t t = 0; t < n; ++t)
      for (NodeId i : m.row(t)) stages_of[static_cast<std::size_t>(i)].push_back(t);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& ts = stages_of[i];
      for (std::size_t a = 0; a < ts.size();) {
        std::size_t b = a + 1;
        while (b < ts.size() && ts[b] == ts[b - 1] + 1) ++b;
        const double h = static_cast<double>(ts[b - 1] - ts[a] + 1) * cell;
        svg.rect(x_of(i) + inset, y_of(ts[a]), cell - 2 * inset, h, color, "",
                 fmt::format("{} {} in stages {}-{}", node_label(static_cast<NodeId>(i)), what, ts[a], ts[b - 1]));
        a = b;
      }
    }
  };
  runs(s.S_ram, kInRam, "in RAM");
  runs(s.S_aux, kOnStorage, "on storage");

  // Events. A cell with several events (a node computed and paged out in its own stage) is
  // split into vertical slices so none hides another.
  std::array<std::size_t, 4> counts{};
  std::vector<const EventStyle*> here;
  for (std::size_t t = 0; t < n; ++t) {
    const SparseRow &r = s.R.row(t), &out = s.M_out.row(t), &in = s.M_in.row(t);
    std::size_t a = 0, b = 0, c = 0;  // merge the three sorted rows
    constexpr NodeId kNone = std::numeric_limits<NodeId>::max();
    while (a < r.size() || b < out.size() || c < in.size()) {
      const NodeId i = std::min({a < r.size() ? r[a] : kNone, b < out.size() ? out[b] : kNone,
                                 c < in.size() ? in[c] : kNone});
      here.clear();
      if (c < in.size() && in[c] == i) {
        ++c;
        here.push_back(&kPageIn);
        ++counts[3];
      }
      if (a < r.size() && r[a] == i) {
        ++a;
        const bool own = static_cast<std::size_t>(i) == t;
        here.push_back(own ? &kCompute : &kRecompute);
        ++counts[own ? 0 : 1];
      }
      if (b < out.size() && out[b] == i) {
        ++b;
        here.push_back(&kPageOut);
        ++counts[2];
      }
      // Sparse events get a mark of at least kMinMark px, centered on the cell, so a single
      // recompute stays visible in a 400-node picture; computes (the diagonal) keep the cell.
      const bool sparse = here.size() > 1 || here[0] != &kCompute;
      const double mark = sparse ? std::max(cell, kMinMark) : cell;
      const double x0 = x_of(static_cast<std::size_t>(i)) + (cell - mark) / 2, y0 = y_of(t) + (cell - mark) / 2;
      const double slice = mark / static_cast<double>(here.size());
      for (std::size_t k = 0; k < here.size(); ++k)
        svg.rect(x0 + static_cast<double>(k) * slice, y0, slice, mark,
                 here[k]->color, here[k]->css_class,
                 fmt::format("stage {}: {} {}", t, here[k]->label, node_label(i)));
    }
  }
  svg.rect(left, top, grid, grid, "none", "", "", "stroke=\"#999\" stroke-width=\"0.8\"");

  // The loss: where the forward pass ends and the backward pass begins.
  if (split < n) {
    const double x = x_of(split);
    svg.line(x, top - 2, x, top + grid + 6, "#444", 1.2, "5 3");
    svg.text(x - 5, top + grid + 18, "\u2190 forward", 12, "end", "font-weight=\"bold\" fill=\"#444\"");
    svg.text(x + 5, top + grid + 18, "backward \u2192", 12, "start", "font-weight=\"bold\" fill=\"#444\"");
  }
  if (names) {
    for (std::size_t i = 0; i < n; ++i) {
      const double x = x_of(i) + cell / 2 + 3, y = top + grid + 30;
      svg.text(x, y, short_name(g.node(static_cast<NodeId>(i)).name), std::min(cell - 1, 10.0), "end",
               fmt::format("transform=\"rotate(-60 {:.1f} {:.1f})\" fill=\"#333\"", x, y));
    }
  }

  // Legend with counts: the numbers a reader checks first.
  const double lx = left + grid + 28;
  double ly = top;
  const auto entry = [&](const char* color, const std::string& label, std::string_view extra = {}) {
    svg.rect(lx, ly, 14, 14, color, "", "", extra);
    svg.text(lx + 22, ly + 11.5, label, 13);
    ly += 22;
  };
  entry(kCompute.color, fmt::format("compute: {}", counts[0]));
  entry(kRecompute.color, fmt::format("recompute: {}", counts[1]));
  entry(kPageOut.color, fmt::format("page-out: {}", counts[2]));
  entry(kPageIn.color, fmt::format("page-in: {}", counts[3]));
  ly += 6;
  entry(kInRam, "in RAM (S_RAM)");
  entry(kOnStorage, "on storage (S_AUX)");
  if (split < n) {
    svg.line(lx + 7, ly, lx + 7, ly + 14, "#444", 1.2, "5 3");
    svg.text(lx + 22, ly + 11.5, fmt::format("after the loss ({})", split - 1), 13);
  }
  return svg.finish();
}

}  // namespace poet
