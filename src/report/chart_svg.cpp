#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "poet/report/chart.h"
#include "svg_writer.h"

namespace poet {
namespace {

// Distinguishable on white and in grey print (Okabe-Ito, then darker extras).
constexpr const char* kColors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                   "#56B4E9", "#000000", "#8c564b", "#7f7f7f", "#bcbd22"};

std::string tick_label(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e4 || a < 1e-3) return fmt::format("{:.0e}", v);
  return fmt::format("{:g}", v);
}

// A series whose every point a later one draws over (Checkmate's, POET remat's and POET's
// optima are often the same) would be in the legend and nowhere in the plot: the legend
// says which series covers it, "checkmate (= poet)".
template <typename ToPixelX, typename ToPixelY>
std::string legend_name(const LineChart& chart, std::size_t k, const ToPixelX& px, const ToPixelY& py) {
  const auto drawn = [&](const std::pair<double, double>& p) { return !chart.log_y || p.second > 0; };
  const auto covers = [&](const ChartSeries& over, const std::pair<double, double>& p) {
    return std::any_of(over.points.begin(), over.points.end(), [&](const auto& q) {
      return drawn(q) && std::fabs(px(q.first) - px(p.first)) < 0.5 && std::fabs(py(q.second) - py(p.second)) < 0.5;
    });
  };
  const ChartSeries& s = chart.series[k];
  if (std::none_of(s.points.begin(), s.points.end(), drawn)) return s.name;
  for (std::size_t j = chart.series.size(); j-- > k + 1;) {
    const ChartSeries& over = chart.series[j];
    if (std::all_of(s.points.begin(), s.points.end(), [&](const auto& p) { return !drawn(p) || covers(over, p); }))
      return fmt::format("{} (= {})", s.name, over.name);
  }
  return s.name;
}

}  // namespace

std::string line_chart_svg(const LineChart& chart) {
  const double left = 80, top = 40, legend_w = 190, bottom = 60;
  const double plot_w = chart.width_px - left - legend_w - 20, plot_h = chart.height_px - top - bottom;
  report::Svg svg(chart.width_px, chart.height_px);
  svg.text(left, 24, chart.title, 16, "start", "font-weight=\"bold\"");

  double x_min = std::numeric_limits<double>::infinity(), x_max = -x_min, y_min = x_min, y_max = -x_min;
  for (const auto& s : chart.series)
    for (const auto& [x, y] : s.points) {
      if (chart.log_y && y <= 0) continue;
      x_min = std::min(x_min, x), x_max = std::max(x_max, x);
      y_min = std::min(y_min, y), y_max = std::max(y_max, y);
    }
  if (!std::isfinite(x_min)) {
    svg.text(left + plot_w / 2, top + plot_h / 2, "no data", 14, "middle");
    return svg.finish();
  }
  if (x_max == x_min) x_min -= 1, x_max += 1;
  const auto ty = [&](double y) { return chart.log_y ? std::log10(y) : y; };
  double lo = ty(y_min), hi = ty(y_max);
  if (chart.log_y) {
    lo = std::floor(lo), hi = std::ceil(hi);
    if (hi == lo) hi = lo + 1;
  } else {
    if (hi == lo) hi = lo + 1;
    if (chart.y_from_zero) lo = std::min(lo, 0.0);
    const double step = report::nice_step(hi - lo, 6);
    hi = std::ceil(hi / step) * step;
    lo = std::floor(lo / step) * step;
  }
  const auto px = [&](double x) { return left + (x - x_min) / (x_max - x_min) * plot_w; };
  const auto py = [&](double y) { return top + plot_h - (ty(y) - lo) / (hi - lo) * plot_h; };

  // Grid and ticks.
  const double x_step = report::nice_step(x_max - x_min, 8);
  for (double x = std::ceil(x_min / x_step) * x_step; x <= x_max + 1e-9 * x_step; x += x_step) {
    svg.line(px(x), top, px(x), top + plot_h, "#eeeeee");
    svg.text(px(x), top + plot_h + 18, tick_label(x), 11, "middle");
  }
  if (chart.log_y) {
    for (double e = lo; e <= hi; ++e) {
      const double y = std::pow(10, e);
      svg.line(left, py(y), left + plot_w, py(y), "#eeeeee");
      svg.text(left - 6, py(y) + 4, tick_label(y), 11, "end");
    }
  } else {
    const double y_step = report::nice_step(hi - lo, 6);
    for (double y = lo; y <= hi + 1e-9 * y_step; y += y_step) {
      svg.line(left, py(y), left + plot_w, py(y), "#eeeeee");
      svg.text(left - 6, py(y) + 4, tick_label(y), 11, "end");
    }
  }
  svg.line(left, top + plot_h, left + plot_w, top + plot_h, "#333333");
  svg.line(left, top, left, top + plot_h, "#333333");
  svg.text(left + plot_w / 2, chart.height_px - 18, chart.x_label, 13, "middle");
  svg.text(18, top + plot_h / 2, chart.y_label, 13, "middle",
           fmt::format("transform=\"rotate(-90 18 {:.1f})\"", top + plot_h / 2));

  for (std::size_t k = 0; k < chart.series.size(); ++k) {
    const ChartSeries& s = chart.series[k];
    const char* color = kColors[k % std::size(kColors)];
    auto points = s.points;
    std::sort(points.begin(), points.end());
    std::string d;
    for (const auto& [x, y] : points) {
      if (chart.log_y && y <= 0) continue;
      d += fmt::format("{}{:.2f},{:.2f}", d.empty() ? "M" : " L", px(x), py(y));
    }
    const std::string attributes = fmt::format("class=\"series\" data-name=\"{}\"", report::escape_xml(s.name));
    if (!d.empty() && s.style == SeriesStyle::LineAndMarkers) svg.path(d, color, 2, "none", attributes);
    if (!d.empty() && s.style == SeriesStyle::Dashed) svg.path(d, color, 1.5, "none", attributes + " stroke-dasharray=\"6 4\"");
    if (s.style == SeriesStyle::Markers) svg.begin_group(attributes);
    if (s.style != SeriesStyle::Dashed)
      for (const auto& [x, y] : points)
        if (!chart.log_y || y > 0) svg.circle(px(x), py(y), s.style == SeriesStyle::Markers ? 5 : 3.5, color);
    if (s.style == SeriesStyle::Markers) svg.end_group();
    const double ly = top + 10 + 20 * static_cast<double>(k);
    if (s.style == SeriesStyle::Markers)
      svg.circle(left + plot_w + 32, ly, 5, color);
    else
      svg.line(left + plot_w + 20, ly, left + plot_w + 44, ly, color, s.style == SeriesStyle::Dashed ? 1.5 : 3,
               s.style == SeriesStyle::Dashed ? "6 4" : "");
    svg.text(left + plot_w + 50, ly + 4, legend_name(chart, k, px, py), 12);
  }
  return svg.finish();
}

}  // namespace poet
