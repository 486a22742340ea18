#include <algorithm>

#include "poet/report/svg.h"
#include "poet/util/units.h"
#include "svg_writer.h"

namespace poet {

std::string memory_svg(const Graph& g, const SimulationResult& r, std::optional<std::int64_t> budget_bytes) {
  using report::Svg;
  const double left = 90, top = 50, plot_w = 900, plot_h = 360;
  Svg svg(left + plot_w + 40, top + plot_h + 70);
  const double end_s = std::max(r.makespan_s, 1e-12);
  const double top_bytes =
      1.08 * static_cast<double>(std::max<std::int64_t>({r.peak_bytes, budget_bytes.value_or(0), 1}));
  const auto x = [&](double t) { return left + plot_w * t / end_s; };
  const auto y = [&](double bytes) { return top + plot_h * (1 - bytes / top_bytes); };

  svg.text(left, 24,
           fmt::format("{}: memory over one training step (peak {} of {})", g.name(),
                       format_bytes(static_cast<double>(r.peak_bytes)),
                       budget_bytes ? "budget " + format_bytes(static_cast<double>(*budget_bytes)) : "no budget"),
           16, "start", "font-weight=\"bold\"");

  // Axes with round ticks.
  // Round steps in the binary unit the axis is labelled in (KiB, MiB, ...).
  double unit = 1;
  while (top_bytes / unit >= 1024) unit *= 1024;
  const double byte_step = unit * report::nice_step(top_bytes / unit, 6);
  for (double b = 0; b <= top_bytes; b += byte_step) {
    svg.line(left, y(b), left + plot_w, y(b), "#eee");
    svg.text(left - 8, y(b) + 4, format_bytes(b), 11, "end");
  }
  const double time_step = report::nice_step(end_s, 8);
  for (double t = 0; t <= end_s * 1.0001; t += time_step) svg.text(x(t), top + plot_h + 18, format_seconds(t), 11, "middle");
  svg.text(left + plot_w / 2, top + plot_h + 44, "time (compute and overlapped paging)", 12, "middle");
  svg.line(left, top, left, top + plot_h, "#333");
  svg.line(left, top + plot_h, left + plot_w, top + plot_h, "#333");

  // Fixed memory as a band at the bottom, activations as a step line above it.
  const auto fixed = static_cast<double>(r.fixed_bytes);
  if (r.fixed_bytes > 0) {
    svg.rect(left, y(fixed), plot_w, y(0) - y(fixed), "#e5e5e5");
    svg.text(left + 6, y(fixed) + 14, "fixed: " + format_bytes(fixed), 11);
  }
  std::string d = fmt::format("M{:.2f},{:.2f}", x(0), y(fixed));
  double last = fixed;
  for (const auto& p : r.timeline) {
    const double v = fixed + static_cast<double>(p.bytes);
    d += fmt::format(" L{:.2f},{:.2f} L{:.2f},{:.2f}", x(p.time_s), y(last), x(p.time_s), y(v));
    last = v;
  }
  d += fmt::format(" L{:.2f},{:.2f}", x(end_s), y(last));
  svg.path(d, "#1f4e99", 1.5);

  if (budget_bytes) {
    const auto b = static_cast<double>(*budget_bytes);
    svg.line(left, y(b), left + plot_w, y(b), "#d62728", 1.5, "6 4");
    svg.text(left + plot_w - 4, y(b) - 6, "budget " + format_bytes(b), 12, "end", "fill=\"#d62728\"");
  }
  // The peak: first time the line reaches it.
  for (const auto& p : r.timeline) {
    if (p.bytes != r.peak_activation_bytes) continue;
    const double px = x(p.time_s), py = y(static_cast<double>(r.peak_bytes));
    svg.line(px, py, px, py - 14, "#333");
    svg.text(px + 4, py - 16, "peak " + format_bytes(static_cast<double>(r.peak_bytes)), 12, "start");
    break;
  }
  return svg.finish();
}

}  // namespace poet
