#include "starts.h"

#include <algorithm>

#include "eviction_heuristic.h"
#include "milp_model.h"
#include "unread_page_outs.h"
#include "poet/baselines/capuchin.h"
#include "poet/baselines/dtr.h"
#include "poet/plan/plan.h"

namespace poet::solve_internal {
namespace {

bool meets_deadline(const Schedule& s, const GraphCosts& costs, const SolveOptions& o) {
  return !o.deadline_s || milp_time_s(s, costs, o.accounting, 0, s.stages) <= *o.deadline_s * (1 + 1e-12);
}

}  // namespace

std::vector<StartSchedule> start_schedules(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                           const SimulationOptions& simulation, std::int64_t fixed_bytes) {
  const bool strict = o.accounting == Accounting::Strict;
  SimulationOptions budgeted = simulation;
  budgeted.ram_budget_bytes = o.ram_budget_bytes;
  const auto judge = [&](const Schedule& s) { return simulate_for_budget(g, costs, plan_from_schedule(s, g), budgeted); };
  std::vector<StartSchedule> out;
  const auto consider = [&](Schedule s) {
    drop_unread_page_outs(s);
    if (o.mode == SolveMode::RematOnly && s.M_out.count() > 0) return;
    // The heuristic's variants often agree: one copy each (the method is part of a schedule).
    if (std::any_of(out.begin(), out.end(), [&](const StartSchedule& kept) { return kept.schedule == s; })) return;
    if (!meets_deadline(s, costs, o)) return;
    SimulationResult r = judge(s);
    if (o.mode == SolveMode::PagingOnly && r.recomputes > 0) return;
    // Reference accounting: the budget is the MILP's count, which the heuristic keeps and
    // the baselines are stricter than; strict: what the simulator counts.
    if (strict && r.peak_bytes > o.ram_budget_bytes) return;
    const double objective = o.objective == SolveObjective::Energy ? r.total_energy_j() : r.compute_time_s;
    out.push_back({std::move(s), std::move(r), objective});
  };

  // The eviction heuristic counts memory per stage as the MILP does (the simulator makes
  // computes wait for page-outs in flight to match); where the simulator still finds it
  // over the budget (a stage's transient peak), it tries again with less. In POET's mode it also runs restricted to recomputation and
  // to paging, and each with and without its guard on stage peaks: one greedy choice does
  // not suit every budget and deadline.
  std::vector<SolveMode> modes = {o.mode};
  if (o.mode == SolveMode::RematAndPaging) modes.insert(modes.end(), {SolveMode::RematOnly, SolveMode::PagingOnly});
  for (const SolveMode mode : modes) {
    SolveOptions restricted = o;
    restricted.mode = mode;
    for (const bool guard_peaks : {false, true}) {
      if (guard_peaks && mode == SolveMode::PagingOnly) continue;  // the guard weighs recomputations only
      for (std::int64_t target = o.ram_budget_bytes - fixed_bytes, attempt = 0; attempt < 4 && target > 0; ++attempt) {
        const auto s = eviction_schedule(g, costs, restricted, target, guard_peaks);
        if (!s) break;
        const std::int64_t peak = strict ? judge(*s).peak_bytes : o.ram_budget_bytes;  // reference: the MILP's count
        if (peak <= o.ram_budget_bytes) {
          consider(*s);
          break;
        }
        target -= peak - o.ram_budget_bytes;
      }
    }
  }
  // The baselines take the budget as the simulator counts it.
  if (o.mode != SolveMode::RematOnly)
    if (auto r = capuchin_for_budget(g, costs, budgeted); r.found()) consider(std::move(*r.schedule));
  if (o.mode != SolveMode::PagingOnly)
    if (auto r = dtr_for_budget(g, costs, budgeted); r.found()) consider(std::move(*r.schedule));
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.objective < b.objective; });
  return out;
}

}  // namespace poet::solve_internal
