// Sweep rows as JSON (between processes, and for scripts) and as CSV.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "poet/strategy/strategy.h"
#include "poet/sweep/sweep.h"

namespace poet {

std::string task_label(const SweepTask& t) {
  return fmt::format("{} at {:g}%{}", t.method, t.budget_percent,
                     t.deadline_multiple > 0 ? fmt::format(", deadline {:g}x", t.deadline_multiple) : "");
}

namespace {

// A row without a schedule has no figures, a baseline no proven gap, a task without a
// deadline no multiple: null, not a 0 a script would take for a value (the cheapest energy).
nlohmann::json figure(bool has, auto value) { return has ? nlohmann::json(value) : nlohmann::json(); }

bool has_gap(const SweepRow& r) { return r.found && is_strategy(r.task.method, StrategyKind::Solver); }

// A null back to the 0 a SweepRow holds for it.
template <typename T>
T or_zero(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  return v.is_null() ? T{} : v.get<T>();
}

// CSV: empty for null.
std::string csv_figure(bool has, std::string text) { return has ? text : ""; }

}  // namespace

nlohmann::json sweep_row_to_json(const SweepRow& r) {
  return {{"method", r.task.method},
          {"budget_percent", r.task.budget_percent},
          {"budget_bytes", r.task.budget_bytes},
          {"deadline_multiple", figure(r.task.deadline_multiple > 0, r.task.deadline_multiple)},
          {"found", r.found},
          {"status", r.status},
          {"reason", r.reason},
          {"energy_j", figure(r.found, r.energy_j)},
          {"compute_energy_j", figure(r.found, r.compute_energy_j)},
          {"paging_energy_j", figure(r.found, r.paging_energy_j)},
          {"makespan_s", figure(r.found, r.makespan_s)},
          {"compute_time_s", figure(r.found, r.compute_time_s)},
          {"peak_bytes", figure(r.found, r.peak_bytes)},
          {"recomputes", figure(r.found, r.recomputes)},
          {"pageouts", figure(r.found, r.pageouts)},
          {"pageins", figure(r.found, r.pageins)},
          {"gap", figure(has_gap(r), r.gap)},
          {"method_seconds", r.method_seconds}};
}

SweepRow sweep_row_from_json(const nlohmann::json& j) {
  SweepRow r;
  r.task.method = j.at("method");
  r.task.budget_percent = j.at("budget_percent");
  r.task.budget_bytes = j.at("budget_bytes");
  r.task.deadline_multiple = or_zero<double>(j, "deadline_multiple");
  r.found = j.at("found");
  r.status = j.at("status");
  r.reason = j.at("reason");
  r.energy_j = or_zero<double>(j, "energy_j");
  r.compute_energy_j = or_zero<double>(j, "compute_energy_j");
  r.paging_energy_j = or_zero<double>(j, "paging_energy_j");
  r.makespan_s = or_zero<double>(j, "makespan_s");
  r.compute_time_s = or_zero<double>(j, "compute_time_s");
  r.peak_bytes = or_zero<std::int64_t>(j, "peak_bytes");
  r.recomputes = or_zero<decltype(r.recomputes)>(j, "recomputes");
  r.pageouts = or_zero<decltype(r.pageouts)>(j, "pageouts");
  r.pageins = or_zero<decltype(r.pageins)>(j, "pageins");
  r.gap = or_zero<double>(j, "gap");
  r.method_seconds = j.at("method_seconds");
  return r;
}

std::string sweep_csv(const std::vector<SweepRow>& rows) {
  std::string out =
      "method,budget_percent,budget_bytes,deadline_multiple,found,status,energy_j,compute_energy_j,paging_energy_j,"
      "makespan_s,compute_time_s,peak_bytes,recomputes,pageouts,pageins,gap,method_seconds,reason\n";
  for (const SweepRow& r : rows) {
    std::string reason;  // CSV: quoted, inner quotes doubled
    for (const char c : r.reason) reason += c == '"' ? std::string("\"\"") : std::string(1, c);
    const std::string figures =  // empty fields without a schedule
        r.found ? fmt::format("{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{},{}", r.energy_j, r.compute_energy_j,
                              r.paging_energy_j, r.makespan_s, r.compute_time_s, r.peak_bytes, r.recomputes, r.pageouts,
                              r.pageins)
                : std::string(8, ',');
    out += fmt::format("{},{},{},{},{},{},{},{},{:.3f},\"{}\"\n", r.task.method, r.task.budget_percent,
                       r.task.budget_bytes, csv_figure(r.task.deadline_multiple > 0, fmt::format("{}", r.task.deadline_multiple)),
                       r.found ? 1 : 0, r.status, figures,
                       csv_figure(has_gap(r), fmt::format("{:.6g}", r.gap)), r.method_seconds, reason);
  }
  return out;
}

}  // namespace poet
