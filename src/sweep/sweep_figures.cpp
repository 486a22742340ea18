// The figures of the paper's section 6 from sweep rows.
#include <fmt/format.h>

#include <map>

#include "poet/report/chart.h"
#include "poet/strategy/strategy.h"
#include "poet/sweep/sweep.h"
#include "poet/util/units.h"

namespace poet {
namespace {

double overhead_percent(const SweepRow& r, double reference_energy_j) {
  return 100 * (r.energy_j / reference_energy_j - 1);
}

// One series per method (in strategy_names order) of the rows `keep` selects.
std::vector<ChartSeries> series_by_method(const std::vector<SweepRow>& rows, double reference_energy_j,
                                          const std::vector<std::string>& methods, bool x_is_deadline) {
  std::vector<ChartSeries> out;
  for (const std::string& m : methods) {
    ChartSeries s;
    s.name = m;
    for (const SweepRow& r : rows)
      if (r.task.method == m && r.found)
        s.points.emplace_back(x_is_deadline ? r.task.deadline_multiple : r.task.budget_percent,
                              overhead_percent(r, reference_energy_j));
    if (!s.points.empty()) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::string energy_overhead_svg(const std::vector<SweepRow>& rows, double reference_energy_j, const std::string& title) {
  LineChart c;
  c.title = title;
  c.x_label = "RAM budget (% of the checkpoint-all activation peak, on top of the parameters)";
  c.y_label = "energy overhead over checkpoint-all (%)";
  c.series = series_by_method(rows, reference_energy_j, strategy_names(), false);
  return line_chart_svg(c);
}

std::string ablation_svg(const std::vector<SweepRow>& rows, double reference_energy_j, const std::string& title) {
  LineChart c;
  c.title = title;
  c.x_label = "runtime budget (x the compute-once time)";
  c.y_label = "energy overhead over checkpoint-all (%)";
  c.series = series_by_method(rows, reference_energy_j, {"poet_remat", "poet_paging", "poet"}, true);
  return line_chart_svg(c);
}

std::string poet_vs_capuchin_svg(const std::vector<SweepRow>& rows, double reference_energy_j,
                                 const std::string& title) {
  LineChart c;
  c.title = title;
  c.x_label = "RAM budget (% of the checkpoint-all activation peak, on top of the parameters)";
  c.y_label = "energy overhead (%, log scale; 0 not drawn)";
  c.log_y = true;
  c.series = series_by_method(rows, reference_energy_j, {"capuchin", "poet"}, false);
  return line_chart_svg(c);
}

std::string overhead_table(const std::vector<SweepRow>& rows, const std::vector<std::string>& methods,
                           double reference_energy_j) {
  std::map<double, std::map<std::string, const SweepRow*>> by_budget;
  for (const SweepRow& r : rows) by_budget[r.task.budget_percent][r.task.method] = &r;
  std::string out = "| budget |";
  for (const auto& m : methods) out += " " + m + " |";
  out += "\n| --- |";
  for (std::size_t k = 0; k < methods.size(); ++k) out += " --- |";
  out += "\n";
  for (auto it = by_budget.rbegin(); it != by_budget.rend(); ++it) {
    out += fmt::format("| {:g}% |", it->first);
    for (const auto& m : methods) {
      const auto f = it->second.find(m);
      const bool found = f != it->second.end() && f->second->found;
      if (!found) {
        out += f != it->second.end() && f->second->status == "error" ? " error |" : " - |";
        continue;
      }
      out += fmt::format(" {:.2f}%", overhead_percent(*f->second, reference_energy_j));
      // POET's point is only as good as its proof: how far above its proven bound it may be.
      if (m == "poet") out += fmt::format(" (gap {:.2f}%)", 100 * f->second->gap);
      out += " |";
    }
    out += "\n";
  }
  return out;
}

std::string poet_vs_pofo_table(const std::vector<SweepRow>& rows) {
  std::map<double, std::map<std::string, const SweepRow*>> by_budget;
  for (const SweepRow& r : rows)
    if (r.task.method == "poet" || r.task.method == "pofo") by_budget[r.task.budget_percent][r.task.method] = &r;
  std::string out =
      "| budget | POET peak | POET step time | POET energy | POFO peak | POFO step time | POFO energy |\n"
      "| --- | --- | --- | --- | --- | --- | --- |\n";
  const auto cells = [](const SweepRow* r) {
    if (r == nullptr) return std::string("- | - | -");
    if (!r->found) return fmt::format("{} | - | -", r->status);
    // Energies to 6 digits: the two methods often differ past the third.
    return fmt::format("{} | {} | {:.6g} J", format_bytes(r->peak_bytes), format_seconds(r->makespan_s), r->energy_j);
  };
  for (auto it = by_budget.rbegin(); it != by_budget.rend(); ++it) {
    const auto find = [&](const char* m) -> const SweepRow* {
      const auto f = it->second.find(m);
      return f == it->second.end() ? nullptr : f->second;
    };
    out += fmt::format("| {:g}% | {} | {} |\n", it->first, cells(find("poet")), cells(find("pofo")));
  }
  return out;
}

}  // namespace poet
