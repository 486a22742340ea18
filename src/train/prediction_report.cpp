#include "poet/train/prediction_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "poet/profile/profiling.h"
#include "poet/report/chart.h"
#include "poet/util/units.h"

namespace poet::train {

namespace {

// Median of f over the rows that ran; 0 when none ran.
template <typename F>
double median_over_ran(const std::vector<PredictionRow>& rows, F f) {
  std::vector<double> values;
  for (const PredictionRow& r : rows)
    if (r.ran) values.push_back(f(r));
  return values.empty() ? 0 : profile::summarize(std::move(values)).median;
}

// Below this CPU share the steps were sharing their core with other processes.
constexpr double kBusyCpuShare = 0.9;

// Storage busy this many times longer than predicted: the transfers ran slower than the
// profile's storage figures. On the 2-core VM of docs/BENCHMARKS.md, resnet18_cifar's
// Capuchin plans kept it busy 0.83-1.12x the prediction (two transfers side by side), and
// lenet5's, whose two transfers cannot overlap, 1.16-1.65x; for seconds at a time its
// page-ins took 3-4x as long.
constexpr double kSlowStorage = 1.5;

}  // namespace

double median_absolute_error(const std::vector<PredictionRow>& rows) {
  return median_over_ran(rows, [](const PredictionRow& r) { return std::fabs(r.relative_error()); });
}

std::string prediction_summary(const std::vector<PredictionRow>& rows) {
  const auto ran = std::ranges::count_if(rows, &PredictionRow::ran);
  if (ran == 0) return "no plan ran";
  const double share = median_over_ran(rows, [](const PredictionRow& r) { return r.cpu_share; });
  std::string out = fmt::format("median |error| {:.1f}% over {} that ran; the steps had {:.0f}% of a CPU",
                                100 * median_absolute_error(rows), counted(static_cast<std::size_t>(ran), "plan"),
                                100 * share);
  if (share < kBusyCpuShare)
    out += " (median): other processes were using this CPU, so the measured times include waiting for them; "
           "measure again on a quiet machine";
  const PredictionRow* slowest = nullptr;
  const auto storage_ratio = [](const PredictionRow& r) { return r.measured_storage_s / r.predicted_storage_s; };
  for (const PredictionRow& r : rows)
    if (r.ran && r.predicted_storage_s > 0 && (!slowest || storage_ratio(r) > storage_ratio(*slowest))) slowest = &r;
  if (slowest && storage_ratio(*slowest) > kSlowStorage)
    out += fmt::format(
        "; storage was busy {:.1f}x as long as predicted with {} at {} ({} a step against {}): the transfers ran "
        "slower than the profile's storage figures say, and the plans that page with them; where the storage has "
        "slow phases, profile again when it is steady",
        storage_ratio(*slowest), slowest->strategy, slowest->budget, format_seconds(slowest->measured_storage_s),
        format_seconds(slowest->predicted_storage_s));
  return out;
}

std::string prediction_table_markdown(const std::vector<PredictionRow>& rows) {
  std::string out =
      "| model | strategy | budget | recomputations | page-outs | paged per step | predicted step | measured step "
      "(median, IQR) | waiting for transfers, predicted / measured | storage busy, predicted / measured | CPU share | "
      "error |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const PredictionRow& r : rows) {
    const std::string budget = fmt::format("{} ({})", r.budget, format_bytes(static_cast<double>(r.budget_bytes)));
    if (!r.ran) {
      out += fmt::format("| {} | {} | {} | - | - | - | - | - | - | - | - | {} |\n", r.model, r.strategy, budget, r.note);
      continue;
    }
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {}, {} ({} steps) | {} / {} | {} / {} | {:.0f}% | {:+.1f}%{} |\n",
                       r.model, r.strategy, budget, r.recomputes, r.pageouts,
                       format_bytes(static_cast<double>(r.bytes_paged_per_step)), format_seconds(r.predicted_s),
                       format_seconds(r.measured_s), format_seconds(r.spread_s), r.steps,
                       format_seconds(r.predicted_stall_s), format_seconds(r.measured_stall_s),
                       format_seconds(r.predicted_storage_s), format_seconds(r.measured_storage_s), 100 * r.cpu_share,
                       100 * r.relative_error(), r.note.empty() ? "" : "; " + r.note);
  }
  return out;
}

nlohmann::json prediction_rows_json(const std::vector<PredictionRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const PredictionRow& r : rows) {
    nlohmann::json j = {{"model", r.model},   {"strategy", r.strategy}, {"budget", r.budget},
                        {"budget_bytes", r.budget_bytes}, {"ran", r.ran}};
    if (r.ran)
      j.update({{"recomputations", r.recomputes},
                {"pageouts", r.pageouts},
                {"bytes_paged_per_step", r.bytes_paged_per_step},
                {"predicted_step_s", r.predicted_s},
                {"measured_step_s", r.measured_s},
                {"measured_spread_s", r.spread_s},
                {"predicted_stall_s", r.predicted_stall_s},
                {"measured_stall_s", r.measured_stall_s},
                {"predicted_storage_s", r.predicted_storage_s},
                {"measured_storage_s", r.measured_storage_s},
                {"cpu_share", r.cpu_share},
                {"steps", r.steps},
                {"relative_error", r.relative_error()}});
    if (!r.note.empty()) j["note"] = r.note;
    out.push_back(std::move(j));
  }
  return out;
}

std::string prediction_scatter_svg(const std::vector<PredictionRow>& rows, const std::string& title) {
  // One series per strategy, in milliseconds, which read better than seconds here.
  std::map<std::string, ChartSeries> by_strategy;
  double low = std::numeric_limits<double>::infinity(), high = 0;
  for (const PredictionRow& r : rows) {
    if (!r.ran) continue;
    ChartSeries& s = by_strategy[r.strategy];
    s.name = r.strategy;
    s.style = SeriesStyle::Markers;
    s.points.emplace_back(1e3 * r.predicted_s, 1e3 * r.measured_s);
    low = std::min({low, 1e3 * r.predicted_s, 1e3 * r.measured_s});
    high = std::max({high, 1e3 * r.predicted_s, 1e3 * r.measured_s});
  }
  LineChart chart;
  chart.title = title;
  chart.x_label = "predicted step time (ms, simulator)";
  chart.y_label = "measured step time (ms, median)";
  chart.y_from_zero = false;  // the points sit near the diagonal, far from 0
  for (auto& [name, s] : by_strategy) chart.series.push_back(std::move(s));
  if (high > 0) {
    const double from = low / 1.15, to = high * 1.15;  // room for the +-10% band
    chart.series.push_back({"measured = predicted", {{from, from}, {to, to}}, SeriesStyle::Dashed});
    chart.series.push_back({"+10%", {{from, from * 1.1}, {to / 1.1, to}}, SeriesStyle::Dashed});
    chart.series.push_back({"-10%", {{from / 0.9, from}, {to, to * 0.9}}, SeriesStyle::Dashed});
  }
  return line_chart_svg(chart);
}

}  // namespace poet::train
