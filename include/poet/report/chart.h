// Line charts for the evaluation's figures (energy against budget, one line per method), and
// scatter plots.
// Plain SVG like the other pictures.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace poet {

// Markers alone make a scatter plot; a dashed line without markers, a reference line.
enum class SeriesStyle { LineAndMarkers, Markers, Dashed };

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in x order; a method that has
                                                  // no schedule at some x simply has no point there
  SeriesStyle style = SeriesStyle::LineAndMarkers;
};

struct LineChart {
  std::string title, x_label, y_label;
  bool log_y = false;  // y > 0 only; points at or below 0 are left out
  bool y_from_zero = true;  // a linear y axis starts at 0 (overheads and energies read best so)
  std::vector<ChartSeries> series;
  double width_px = 820, height_px = 480;
};

// Axes with round ticks, one colour and marker per series, a legend on the right. A series
// with a single point is drawn as a marker alone.
std::string line_chart_svg(const LineChart& chart);

}  // namespace poet
