// The memory timeline of one simulated step against the budget.
#include <algorithm>
#include <array>
#include <cmath>

#include "poet/report/svg.h"
#include "poet/util/units.h"
#include "svg_writer.h"

namespace poet {
namespace {

constexpr const char* kFixed = "#dcdcdc";
constexpr const char* kActivations = "#bcd4ec";
constexpr const char* kLine = "#1f4e99";
constexpr const char* kBudget = "#d62728";
constexpr const char* kOver = "#f4a3a3";

// When fixed memory fills more than this share of the plot, the y axis starts above zero:
// otherwise a 170 KiB parameter band flattens 4 KiB of activations into one pixel.
constexpr double kCutAxisAbove = 0.5;

// The y axis's ticks, labelled in one unit, the top's, with steps round in it: "0.6 MiB, 0.8 MiB,
// 1.0 MiB", where each tick in its own unit read "614 KiB, 819 KiB, 1 MiB".
struct ByteTicks {
  double unit = 1;
  const char* unit_name = "B";
  double step = 1;

  std::string label(double bytes) const {
    const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step / unit) + 1e-9)));
    return fmt::format("{:.{}f} {}", bytes / unit, decimals, unit_name);
  }
};

ByteTicks byte_ticks(double top, double span, int count) {
  static constexpr std::array kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
  ByteTicks ticks;
  std::size_t k = 0;
  for (; top / ticks.unit >= 1024 && k + 1 < kUnits.size(); ++k) ticks.unit *= 1024;
  ticks.unit_name = kUnits[k];
  ticks.step = ticks.unit * report::nice_step(span / ticks.unit, count);
  return ticks;
}

}  // namespace

std::string memory_svg(const SimulationResult& r, std::optional<std::int64_t> budget_bytes,
                       const MemorySvgOptions& options) {
  using report::Svg;
  const double left = 90, top = 78, right = 30, bottom = 62;
  const double plot_w = std::max(options.width_px - left - right, 200.0);
  const double plot_h = std::max(options.height_px - top - bottom, 150.0);
  Svg svg(left + plot_w + right, top + plot_h + bottom);

  // X: seconds, or event ranks (one unit per allocation or release).
  const bool by_time = options.x_axis == MemoryAxis::Time;
  const double x_end =
      by_time ? std::max(r.makespan_s, 1e-12) : static_cast<double>(std::max<std::size_t>(r.timeline.size(), 1));
  const auto x_at = [&](std::size_t rank) {
    return by_time ? r.timeline[rank].time_s : static_cast<double>(rank);
  };
  const auto x = [&](double v) { return left + plot_w * std::clamp(v / x_end, 0.0, 1.0); };

  // Y: from zero (or just under fixed memory) to a little above the peak and the budget.
  const auto fixed = static_cast<double>(r.fixed_bytes);
  const auto peak = static_cast<double>(r.peak_bytes);
  const double high = std::max({peak, static_cast<double>(budget_bytes.value_or(0)), 1.0});
  double y_min = 0;
  if (fixed > kCutAxisAbove * high) y_min = std::max(0.0, fixed - 0.4 * std::max(high - fixed, 1.0));
  // The axis starts at a tick, so that its first label and the note below say the same.
  const ByteTicks ticks = byte_ticks(high, 1.12 * (high - y_min), 6);
  y_min = std::floor(y_min / ticks.step) * ticks.step;
  const double y_top = high + 0.12 * (high - y_min);
  const auto y = [&](double bytes) { return top + plot_h * (1 - (bytes - y_min) / (y_top - y_min)); };

  // Title, summary and legend.
  const std::string title = options.title.empty() ? "memory over one training step" : options.title;
  svg.text(left, 26, title, 17, "start", "font-weight=\"bold\"");
  // Every size in the same words: exact bytes when rounding would make the peak and the
  // budget look equal.
  const bool exact = budget_bytes && *budget_bytes != r.peak_bytes &&
                     format_bytes(static_cast<double>(*budget_bytes)) == format_bytes(peak);
  const auto bytes_text = [&](std::int64_t bytes) {
    return exact ? format_bytes_exact(bytes) : format_bytes(static_cast<double>(bytes));
  };
  std::string summary = fmt::format("peak {} = fixed {} + activations {}", bytes_text(r.peak_bytes),
                                    bytes_text(r.fixed_bytes), bytes_text(r.peak_activation_bytes));
  summary += budget_bytes ? fmt::format(", budget {}", bytes_text(*budget_bytes)) : ", no budget";
  summary += fmt::format("  \u00b7  {}, {}, {}  \u00b7  makespan {}", counted(r.recomputes, "recomputation"),
                         counted(r.pageouts, "page-out"), counted(r.pageins, "page-in"), format_seconds(r.makespan_s));
  svg.text(left, 46, summary, 12, "start", "fill=\"#555\"");
  double lx = left;
  const auto legend = [&](const char* color, std::string_view label) {
    svg.rect(lx, 56, 12, 12, color);
    svg.text(lx + 17, 66, label, 12);
    lx += 30 + 7.0 * static_cast<double>(label.size());
  };
  legend(kFixed, "fixed (parameters, ...)");
  legend(kActivations, "activations");
  if (budget_bytes && r.peak_bytes > *budget_bytes) legend(kOver, "over budget");

  // Grid and y ticks.
  for (auto k = static_cast<long long>(std::ceil(y_min / ticks.step - 1e-9));; ++k) {
    const double b = static_cast<double>(k) * ticks.step;
    if (b > y_top) break;
    svg.line(left, y(b), left + plot_w, y(b), "#ececec");
    svg.text(left - 8, y(b) + 4, ticks.label(b), 11, "end");
  }

  // The fixed band, then activations stacked on it: one closed step path, filled.
  const double base = std::max(fixed, y_min);
  svg.rect(left, y(base), plot_w, y(y_min) - y(base), kFixed);
  std::string line = fmt::format("M{:.2f},{:.2f}", x(0), y(fixed));
  for (std::size_t k = 0; k < r.timeline.size(); ++k) {
    const double v = fixed + static_cast<double>(r.timeline[k].bytes);
    const double at = x(x_at(k));
    line += fmt::format(" H{:.2f} V{:.2f}", at, y(v));
  }
  line += fmt::format(" H{:.2f}", x(x_end));
  const std::string area = line + fmt::format(" V{:.2f} H{:.2f} Z", y(fixed), x(0));
  svg.path(area, "none", 0, kActivations);
  if (budget_bytes && peak > static_cast<double>(*budget_bytes)) {
    // Red where the stack rises above the budget: clip the same area to the band above it.
    svg.clip_rect("over-budget", left, top - 1, plot_w, y(static_cast<double>(*budget_bytes)) - top + 1);
    svg.path(area, "none", 0, kOver, "clip-path=\"url(#over-budget)\"");
  }
  svg.path(line, kLine, 1.4);
  if (y_min > 0) {
    svg.text(left + 6, y(base) + 15,
             fmt::format("fixed {} (axis starts at {})", format_bytes(fixed), ticks.label(y_min)), 11, "start",
             "fill=\"#444\"");
  } else if (fixed > 0) {
    svg.text(left + 6, y(base) + 15, "fixed " + format_bytes(fixed), 11, "start", "fill=\"#444\"");
  }

  // Axes; a zigzag on the y axis when it does not start at zero.
  svg.line(left, top, left, top + plot_h, "#333");
  svg.line(left, top + plot_h, left + plot_w, top + plot_h, "#333");
  if (y_min > 0) {
    const double yb = top + plot_h - 10;
    svg.rect(left - 6, yb - 5, 12, 8, "white");
    svg.path(fmt::format("M{:.1f},{:.1f} l12,-4 M{:.1f},{:.1f} l12,-4", left - 6, yb + 1, left - 6, yb + 5), "#333", 1);
  }
  const double x_step = report::nice_step(x_end, std::max(2, static_cast<int>(plot_w / 110)));
  for (int k = 0; static_cast<double>(k) * x_step <= x_end * 1.0001; ++k) {
    const double v = static_cast<double>(k) * x_step;
    svg.line(x(v), top + plot_h, x(v), top + plot_h + 4, "#333");
    svg.text(x(v), top + plot_h + 18, by_time ? format_seconds(v) : fmt::format("{:.0f}", v), 11, "middle");
  }
  svg.text(left + plot_w / 2, top + plot_h + 44,
           by_time ? "time (compute, with paging overlapped on its own channel)"
                   : "memory event (each allocation or release, in order)",
           12, "middle");

  // Budget: dashed line, labelled at the left where the stack is usually still low.
  if (budget_bytes) {
    const auto b = static_cast<double>(*budget_bytes);
    svg.line(left, y(b), left + plot_w, y(b), kBudget, 1.5, "7 4");
    svg.text(left + 6, y(b) - 6, "budget " + bytes_text(*budget_bytes), 12, "start", fmt::format("fill=\"{}\"", kBudget));
  }
  // Peak: the first event that reaches it.
  for (std::size_t k = 0; k < r.timeline.size(); ++k) {
    if (r.timeline[k].bytes != r.peak_activation_bytes) continue;
    const double px = x(x_at(k)), py = y(peak);
    svg.circle(px, py, 3.5, "#111");
    std::string label = "peak " + bytes_text(r.peak_bytes);
    if (budget_bytes && peak > static_cast<double>(*budget_bytes))
      label += ", over budget by " + format_bytes(peak - static_cast<double>(*budget_bytes));
    const bool right_side = px < left + 0.7 * plot_w;
    svg.text(px + (right_side ? 7 : -7), py - 8, label, 12, right_side ? "start" : "end", "font-weight=\"bold\"");
    break;
  }
  return svg.finish();
}

std::string memory_svg(const Graph& g, const SimulationResult& r, std::optional<std::int64_t> budget_bytes) {
  MemorySvgOptions options;
  options.title = g.name() + ": memory over one training step";
  return memory_svg(r, budget_bytes, options);
}

}  // namespace poet
