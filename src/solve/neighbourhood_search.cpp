#include "neighbourhood_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "guarded_solve.h"
#include "milp_model.h"
#include "unread_page_outs.h"
#include "poet/util/error.h"
#include "poet/util/status_line.h"
#include "poet/util/side_by_side.h"

namespace poet::solve_internal {
namespace {

using Clock = std::chrono::steady_clock;

// The first sweep's stage windows have about this many columns: CBC solved such windows of
// resnet18_cifar's MILP (m4, 50%) in 0.2-7 s each on the shared 2-core machine.
constexpr int kInitialColumns = 3000;
// Past this, one window's root LP takes much of a minute's limit on 2 cores.
constexpr int kMaxWindowColumns = 48000;
// The share of the time left that one pair of windows may take.
constexpr double kWindowTimeShare = 0.25;

double objective_of(const SimulationResult& r, const SolveOptions& o) {
  return o.objective == SolveObjective::Energy ? r.total_energy_j() : r.compute_time_s;
}

// Whether the incumbent does more in stages [begin, end) than compute each of their nodes
// once: if not, no window there can be cheaper.
bool can_improve(const Schedule& s, std::size_t begin, std::size_t end) {
  for (std::size_t t = begin; t < end; ++t)
    if (s.R.row(t).size() > 1 || !s.M_in.row(t).empty() || !s.M_out.row(t).empty()) return true;
  return false;
}

// One window around the incumbent, solved in a CBC child.
struct Attempt {
  std::size_t begin = 0, end = 0;
  std::optional<MilpModel> model;
  std::vector<double> incumbent_x;
  // False where the window's MILP does not accept the incumbent (a baseline's start may count
  // memory otherwise): the window is skipped.
  bool holds_incumbent = false;
  double incumbent_cost = 0;  // the incumbent's window objective, scaled as the model's
  GuardedOutcome solved;
  std::optional<Schedule> spliced;  // the incumbent with CBC's solution, rounded, in the window
  double spliced_cost = 0;          // its window objective, from the rounded solution (not CBC's)
  bool improves() const {
    return spliced && spliced_cost < incumbent_cost - 1e-9 * std::max(1.0, std::fabs(incumbent_cost));
  }
};

}  // namespace

SearchResult neighbourhood_search(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                  std::int64_t activation_budget, const Schedule& start,
                                  const std::function<SimulationResult(const Schedule&)>& judge,
                                  const SearchLimits& limits) {
  const auto began = Clock::now();
  const std::size_t n = g.size();
  SearchResult best;
  best.schedule = start;
  best.simulation = judge(start);
  best.objective = best.milp_objective = objective_of(best.simulation, o);
  const auto seconds_left = [&] { return std::chrono::duration<double>(limits.deadline - Clock::now()).count(); };
  const auto out_of_work = [&] {
    return seconds_left() < 0.5 || o.stop_requested() ||
           (limits.max_windows && best.windows_solved >= *limits.max_windows) || best.objective <= limits.good_enough;
  };

  // The window [begin, end) around the incumbent with `slack` seconds of the deadline to
  // spend; with `free_tensors`, only those move and the rest keep the incumbent's decisions.
  const auto window = [&](std::size_t begin, std::size_t end, double slack,
                          const std::optional<std::vector<NodeId>>& free_tensors) {
    Attempt a;
    a.begin = begin;
    a.end = end;
    Window w = fixed_window(g, best.schedule, begin, end);
    if (o.deadline_s) w.time_cap_s = milp_time_s(best.schedule, costs, o.accounting, begin, end) + slack;
    w.free_tensors = free_tensors;
    w.pinned_to = &best.schedule;
    a.model.emplace(g, costs, o, activation_budget, w);
    a.incumbent_x = a.model->assignment(best.schedule);
    a.holds_incumbent = a.model->satisfied_by(a.incumbent_x);
    if (a.holds_incumbent) a.incumbent_cost = a.model->objective_value(a.incumbent_x);
    return a;
  };
  // A stage window of about `columns` columns from `begin`: shortened (deterministically)
  // where the graph is dense.
  const auto stage_window = [&](std::size_t begin, std::size_t end, double slack, int columns) {
    for (;;) {
      Attempt a = window(begin, end, slack, std::nullopt);
      if (a.model->columns() <= 2 * columns || end - begin <= 1) return a;
      end = begin + std::max<std::size_t>(1, (end - begin) * static_cast<std::size_t>(columns) /
                                                 static_cast<std::size_t>(a.model->columns()));
    }
  };

  // Solves the windows side by side (each CBC child on one core, with a share of the time
  // left) and splices in what the simulator confirms: disjoint windows together, else the
  // best alone. Returns whether the incumbent improved, and sets `unfinished` when CBC did
  // not prove some window optimal.
  const auto solve_and_splice = [&](std::vector<Attempt>& attempts, bool disjoint, bool& unfinished) {
    SolveOptions cbc = o;
    cbc.progress = false;
    cbc.threads = 1;
    cbc.time_limit_s = std::max(0.5, kWindowTimeShare * (seconds_left() - 0.5));
    std::erase_if(attempts, [](const Attempt& a) { return !a.holds_incumbent; });
    run_side_by_side(attempts.size(), [&](std::size_t i) {
      attempts[i].solved = run_cbc_guarded(*attempts[i].model, cbc, &attempts[i].incumbent_x);
    });
    std::vector<Attempt*> better;
    for (Attempt& a : attempts) {
      if (a.solved.outcome.solution) {
        ++best.windows_solved;
        // CBC's objective may be below its rounded solution's by its integrality tolerance.
        Schedule spliced = a.model->splice(best.schedule, *a.solved.outcome.solution);
        const std::vector<double> x = a.model->assignment(spliced);
        if (a.model->satisfied_by(x)) {
          a.spliced = std::move(spliced);
          a.spliced_cost = a.model->objective_value(x);
        }
      }
      if (!a.solved.outcome.proven_optimal) unfinished = true;
      if (a.improves()) better.push_back(&a);
    }
    std::stable_sort(better.begin(), better.end(), [](const Attempt* x, const Attempt* y) {
      return x->spliced_cost - x->incumbent_cost < y->spliced_cost - y->incumbent_cost;
    });
    std::vector<std::vector<Attempt*>> tries;
    if (disjoint && better.size() > 1) tries.push_back(better);
    for (Attempt* a : better) tries.push_back({a});
    for (const auto& attempt : tries) {
      Schedule candidate = best.schedule;
      double milp_objective = best.milp_objective;
      for (const Attempt* a : attempt) {
        candidate = attempt.size() == 1 ? *a->spliced : a->model->splice(candidate, *a->solved.outcome.solution);
        milp_objective += (a->spliced_cost - a->incumbent_cost) * a->model->objective_scale();
      }
      const std::vector<NodeId> dropped = drop_unread_page_outs(candidate);
      if (o.objective == SolveObjective::Energy)  // a page-out costs no compute time
        for (NodeId i : dropped) milp_objective -= costs.nodes[static_cast<std::size_t>(i)].pageout_energy_j;
      SimulationResult simulated;
      try {
        simulated = judge(candidate);
      } catch (const InvalidPlan&) {
        continue;  // the MILP counts memory per stage; the simulator also counts transfers in flight
      }
      const double objective = objective_of(simulated, o);
      if (objective >= best.objective * (1 - 1e-12)) continue;
      if (o.progress)
        print_above_status(fmt::format("  search: stages [{}, {}){}: {:.6g} -> {:.6g}", attempt[0]->begin,
                                       attempt[0]->end,
                                       attempt.size() > 1
                                           ? fmt::format(" and [{}, {})", attempt[1]->begin, attempt[1]->end)
                                           : "",
                                       best.objective, objective));
      best.schedule = std::move(candidate);
      best.schedule.method = "poet";
      best.simulation = std::move(simulated);
      best.objective = objective;
      if (limits.improved) limits.improved(objective);
      best.milp_objective = milp_objective;
      best.windows_improved += static_cast<int>(attempt.size());
      return true;
    }
    return false;
  };

  // Tensor windows free a group of consecutive long-lived tensors over every stage from
  // the first's computation to the last use of any: they trade what is kept across the
  // loss, which no short stage window can.
  const std::vector<std::vector<NodeId>> users = g.users();
  std::vector<NodeId> long_lived;
  for (NodeId i = 0; i < static_cast<NodeId>(n); ++i)
    if (!users[i].empty() && users[i].back() > i + 2) long_lived.push_back(i);
  const auto tensor_window = [&](std::size_t first, std::size_t count, double slack) {
    std::vector<NodeId> group(long_lived.begin() + static_cast<std::ptrdiff_t>(first),
                              long_lived.begin() + static_cast<std::ptrdiff_t>(std::min(long_lived.size(), first + count)));
    std::size_t end = 0;
    for (NodeId i : group) end = std::max(end, static_cast<std::size_t>(users[i].back()) + 1);
    // Free too the tensors one edge away, so that a grouped tensor can be restored by
    // recomputing a short-lived neighbour instead (a batch norm's output and its ReLU from
    // a paged convolution's output), which a pinned neighbour forbids.
    std::vector<NodeId> free = group;
    for (NodeId i : group) {
      free.insert(free.end(), users[i].begin(), users[i].end());
      const auto& inputs = g.node(i).inputs;
      free.insert(free.end(), inputs.begin(), inputs.end());
    }
    std::sort(free.begin(), free.end());
    free.erase(std::unique(free.begin(), free.end()), free.end());
    return window(static_cast<std::size_t>(group.front()), end, slack, free);
  };

  // Sizes: stage windows of `length` stages (at most about `target` columns), tensor
  // windows of `group` tensors; both double after a sweep that improved nothing.
  std::size_t length = std::min<std::size_t>(n, 8), group = 4;
  int target = kInitialColumns;
  std::size_t sweep = 0;
  bool at_largest = false;
  while (!out_of_work()) {
    bool sweep_improved = false, sweep_unfinished = false;
    // Windows start at an offset that moves by half a window each sweep, so that the
    // seams of one sweep lie inside the windows of the next.
    for (std::size_t position = (sweep % 2) * (length / 2); position < n && !out_of_work();) {
      // Two disjoint stage windows with a stage between them (their boundary states then
      // never meet), each with half the deadline's slack.
      const double slack = o.deadline_s ? *o.deadline_s - milp_time_s(best.schedule, costs, o.accounting, 0, n) : 0;
      std::vector<Attempt> pair;
      while (pair.size() < 2 && position < n) {
        const std::size_t end = std::min(n, position + length);
        if (can_improve(best.schedule, position, end)) {
          pair.push_back(stage_window(position, end, slack / 2, target));
          position = pair.back().end + 1;
        } else {
          position = end;
        }
      }
      if (pair.empty()) break;
      sweep_improved |= solve_and_splice(pair, true, sweep_unfinished);
    }
    for (std::size_t first = (sweep % 2) * (group / 2); first < long_lived.size() && !out_of_work();) {
      // Two overlapping tensor windows side by side; the better one is kept.
      const double slack = o.deadline_s ? *o.deadline_s - milp_time_s(best.schedule, costs, o.accounting, 0, n) : 0;
      std::vector<Attempt> pair;
      for (int k = 0; k < 2 && first < long_lived.size(); ++k, first += group)
        pair.push_back(tensor_window(first, group, slack));
      sweep_improved |= solve_and_splice(pair, false, sweep_unfinished);
    }
    ++sweep;
    if (sweep_improved) continue;
    if (sweep_unfinished) {  // CBC ran out of time on some window: smaller ones
      length = std::max<std::size_t>(1, length / 2);
      group = std::max<std::size_t>(1, group / 2);
      target = std::max(kInitialColumns / 4, target / 2);
    } else {  // every window solved and nothing improved: larger ones
      if (at_largest) break;  // a local optimum for the largest windows
      length = std::min(n, 2 * length);
      group = std::min(long_lived.size(), 2 * group);
      target = std::min(kMaxWindowColumns, 2 * target);
      at_largest = length == n || target == kMaxWindowColumns;
    }
  }
  best.seconds = std::chrono::duration<double>(Clock::now() - began).count();
  return best;
}

}  // namespace poet::solve_internal
