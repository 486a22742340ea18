#include "starts.h"

#include <algorithm>
#include <atomic>
#include <random>

#include "eviction_heuristic.h"
#include "milp_model.h"
#include "unread_page_outs.h"
#include "poet/baselines/capuchin.h"
#include "poet/baselines/dtr.h"
#include "poet/plan/plan.h"
#include "poet/util/side_by_side.h"

namespace poet::solve_internal {
namespace {

// Gathers the schedules that fit the problem, each judged by the simulator.
class Starts {
 public:
  Starts(const Graph& g, const GraphCosts& costs, const SolveOptions& o, const SimulationOptions& simulation,
         std::int64_t fixed_bytes, StopAt stop_at = std::nullopt)
      : g_(g), costs_(costs), o_(o), budgeted_(simulation), fixed_bytes_(fixed_bytes), stop_at_(stop_at) {
    budgeted_.ram_budget_bytes = o.ram_budget_bytes;
  }

  void consider(Schedule s) {
    drop_unread_page_outs(s);
    if (o_.mode == SolveMode::RematOnly && s.M_out.count() > 0) return;
    // The heuristic's variants often agree: one copy each (the method is part of a schedule).
    if (std::any_of(out_.begin(), out_.end(), [&](const StartSchedule& kept) { return kept.schedule == s; })) return;
    if (o_.deadline_s && milp_time_s(s, costs_, o_.accounting, 0, s.stages) > *o_.deadline_s * (1 + 1e-12)) return;
    SimulationResult r = judge(s);
    if (o_.mode == SolveMode::PagingOnly && r.recomputes > 0) return;
    // Reference accounting: the budget is the MILP's count, which the heuristic keeps and
    // the baselines are stricter than; strict: what the simulator counts.
    if (strict() && r.peak_bytes > o_.ram_budget_bytes) return;
    const double objective = o_.objective == SolveObjective::Energy ? r.total_energy_j() : r.compute_time_s;
    out_.push_back({std::move(s), std::move(r), objective});
  }

  // The eviction heuristic counts memory per stage as the MILP does (the simulator makes
  // computes wait for page-outs in flight to match); where the simulator still finds it
  // over the budget (a stage's transient peak), it tries again with less.
  void evict(SolveMode mode, const EvictionChoices& choices) {
    if (enough()) return;
    SolveOptions restricted = o_;
    restricted.mode = mode;
    for (std::int64_t target = o_.ram_budget_bytes - fixed_bytes_, attempt = 0; attempt < 4 && target > 0; ++attempt) {
      const auto s = eviction_schedule(g_, costs_, restricted, target, choices, stop_at_);
      if (!s) return;
      const std::int64_t peak = strict() ? judge(*s).peak_bytes : o_.ram_budget_bytes;  // reference: the MILP's count
      if (peak <= o_.ram_budget_bytes) return consider(*s);
      target -= peak - o_.ram_budget_bytes;
    }
  }

  // Out of time or asked to stop, one schedule is enough.
  bool enough() const { return !out_.empty() && stop_now(stop_at_, o_); }

  std::vector<StartSchedule> cheapest_first() && {
    sort_cheapest_first(out_);
    return std::move(out_);
  }

  const SimulationOptions& budgeted() const { return budgeted_; }

 private:
  SimulationResult judge(const Schedule& s) const {
    return simulate_for_budget(g_, costs_, plan_from_schedule(s, g_), budgeted_);
  }

  bool strict() const { return o_.accounting == Accounting::Strict; }

  const Graph& g_;
  const GraphCosts& costs_;
  const SolveOptions& o_;
  SimulationOptions budgeted_;
  std::int64_t fixed_bytes_;
  StopAt stop_at_;
  std::vector<StartSchedule> out_;
};

}  // namespace

void sort_cheapest_first(std::vector<StartSchedule>& starts) {
  std::stable_sort(starts.begin(), starts.end(), [](const auto& a, const auto& b) { return a.objective < b.objective; });
}

std::vector<StartSchedule> start_schedules(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                           const SimulationOptions& simulation, std::int64_t fixed_bytes,
                                           StopAt stop_at) {
  Starts starts(g, costs, o, simulation, fixed_bytes, stop_at);
  // In POET's mode the heuristic also runs restricted to recomputation and to paging, and
  // each with and without its guard on stage peaks: one greedy choice does not suit every
  // budget and deadline.
  std::vector<SolveMode> modes = {o.mode};
  if (o.mode == SolveMode::RematAndPaging) modes.insert(modes.end(), {SolveMode::RematOnly, SolveMode::PagingOnly});
  for (const SolveMode mode : modes)
    for (const bool guard_peaks : {false, true})
      if (!guard_peaks || mode != SolveMode::PagingOnly)  // the guard weighs recomputations only
        starts.evict(mode, {.guard_peaks = guard_peaks, .deadline_after_memory = false, .first = {}});
  // The baselines take the budget as the simulator counts it.
  if (o.mode != SolveMode::RematOnly && !starts.enough())
    if (auto r = capuchin_for_budget(g, costs, starts.budgeted(), [&starts] { return starts.enough(); }); r.found())
      starts.consider(std::move(*r.schedule));
  if (o.mode != SolveMode::PagingOnly && !starts.enough())
    if (auto r = dtr_for_budget(g, costs, starts.budgeted()); r.found()) starts.consider(std::move(*r.schedule));
  return std::move(starts).cheapest_first();
}

std::vector<StartSchedule> cover_starts(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                        const SimulationOptions& simulation, std::int64_t fixed_bytes,
                                        const std::vector<Restoration>& cover, StopAt stop_at) {
  if (cover.empty()) return {};
  Starts starts(g, costs, o, simulation, fixed_bytes, stop_at);
  for (const bool guard_peaks : {false, true})
    for (const bool after_memory : {false, true})
      if (!after_memory || o.deadline_s)
        starts.evict(o.mode, {.guard_peaks = guard_peaks, .deadline_after_memory = after_memory, .first = cover});
  return std::move(starts).cheapest_first();
}

namespace {

// Try k's cover: each restoration dropped with probability 1/2, and each kept one switched
// between paging and recomputing with probability 1/2. Measured on resnet18_cifar m4 30%
// (40 tries each): these gave 0.60083 J; with a tenth to a quarter of the changes,
// 0.6043-0.6046 J; the cover alone 0.6038 J.
std::vector<Restoration> perturbed(const std::vector<Restoration>& cover, int k) {
  std::mt19937 random(static_cast<std::mt19937::result_type>(k) + 1);
  std::vector<Restoration> out;
  for (Restoration r : cover) {
    if (random() & 1) continue;
    if (random() & 1) r.paged = !r.paged;
    out.push_back(r);
  }
  return out;
}

}  // namespace

std::vector<StartSchedule> perturbed_cover_starts(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                                  const SimulationOptions& simulation, std::int64_t fixed_bytes,
                                                  const std::vector<Restoration>& cover, const PerturbedTries& limits) {
  if (cover.empty() || limits.tries <= 0) return {};
  std::vector<std::optional<StartSchedule>> found(static_cast<std::size_t>(limits.tries));  // per try, its cheapest
  // Tries [from, to) on both cores, each thread taking the next try left.
  const auto run = [&](int from, int to) {
    std::atomic<int> next = from;
    run_side_by_side(2, [&](std::size_t) {
      for (int k; (k = next++) < to;) {
        if (stop_now(limits.stop_at, o)) return;
        Starts starts(g, costs, o, simulation, fixed_bytes);
        starts.evict(o.mode, {.guard_peaks = k % 2 == 1,
                              .deadline_after_memory = o.deadline_s && k % 4 >= 2,
                              .first = perturbed(cover, k)});
        std::vector<StartSchedule> schedules = std::move(starts).cheapest_first();
        if (!schedules.empty()) found[static_cast<std::size_t>(k)] = std::move(schedules.front());
      }
    });
  };
  // The cheapest so far, the earliest try among equals: the same on any thread count.
  const auto cheapest = [&] {
    const StartSchedule* out = nullptr;
    for (const auto& f : found)
      if (f && (!out || f->objective < out->objective)) out = &*f;
    return out;
  };
  run(0, std::min(limits.probe, limits.tries));
  if (const StartSchedule* best = cheapest(); best && best->objective < limits.to_beat)
    run(limits.probe, limits.tries);
  if (const StartSchedule* best = cheapest()) return {*best};
  return {};
}

}  // namespace poet::solve_internal
