// Sweep rows as JSON (between processes, and for scripts) and as CSV.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "poet/sweep/sweep.h"

namespace poet {

std::string task_label(const SweepTask& t) {
  return fmt::format("{} at {:g}%{}", t.method, t.budget_percent,
                     t.deadline_multiple > 0 ? fmt::format(", deadline {:g}x", t.deadline_multiple) : "");
}

nlohmann::json sweep_row_to_json(const SweepRow& r) {
  return {{"method", r.task.method},
          {"budget_percent", r.task.budget_percent},
          {"budget_bytes", r.task.budget_bytes},
          {"deadline_multiple", r.task.deadline_multiple},
          {"found", r.found},
          {"status", r.status},
          {"reason", r.reason},
          {"energy_j", r.energy_j},
          {"compute_energy_j", r.compute_energy_j},
          {"paging_energy_j", r.paging_energy_j},
          {"makespan_s", r.makespan_s},
          {"compute_time_s", r.compute_time_s},
          {"peak_bytes", r.peak_bytes},
          {"recomputes", r.recomputes},
          {"pageouts", r.pageouts},
          {"pageins", r.pageins},
          {"gap", r.gap},
          {"method_seconds", r.method_seconds}};
}

SweepRow sweep_row_from_json(const nlohmann::json& j) {
  SweepRow r;
  r.task.method = j.at("method");
  r.task.budget_percent = j.at("budget_percent");
  r.task.budget_bytes = j.at("budget_bytes");
  r.task.deadline_multiple = j.at("deadline_multiple");
  r.found = j.at("found");
  r.status = j.at("status");
  r.reason = j.at("reason");
  r.energy_j = j.at("energy_j");
  r.compute_energy_j = j.at("compute_energy_j");
  r.paging_energy_j = j.at("paging_energy_j");
  r.makespan_s = j.at("makespan_s");
  r.compute_time_s = j.at("compute_time_s");
  r.peak_bytes = j.at("peak_bytes");
  r.recomputes = j.at("recomputes");
  r.pageouts = j.at("pageouts");
  r.pageins = j.at("pageins");
  r.gap = j.at("gap");
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
    out += fmt::format("{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{},{},{:.6g},{:.3f},\"{}\"\n",
                       r.task.method, r.task.budget_percent, r.task.budget_bytes, r.task.deadline_multiple,
                       r.found ? 1 : 0, r.status, r.energy_j, r.compute_energy_j, r.paging_energy_j, r.makespan_s,
                       r.compute_time_s, r.peak_bytes, r.recomputes, r.pageouts, r.pageins, r.gap, r.method_seconds,
                       reason);
  }
  return out;
}

}  // namespace poet
