#include "poet/solve/solve.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <optional>

#include "cbc_runner.h"
#include "guarded_solve.h"
#include "milp_model.h"
#include "neighbourhood_search.h"
#include "proven_bound.h"
#include "solution_file.h"
#include "starts.h"
#include "poet/budget/budget.h"
#include "poet/plan/plan.h"
#include "poet/solve/lower_bound.h"
#include "poet/util/atomic_file.h"
#include "poet/util/error.h"
#include "poet/util/status_line.h"
#include "poet/util/units.h"

namespace poet {

namespace {
// What "meets the deadline" means to the solver, said wherever it finds none that does: a
// schedule the simulator times within the deadline may still not count as meeting it.
std::string deadline_counted(const SolveOptions& o) {
  if (!o.deadline_s || o.accounting != Accounting::Strict) return "";
  return ". A step's time counts every transfer in full here, as if none ran beside a compute, so that a schedule "
         "within the deadline is within it however its transfers fall (--accounting reference counts compute time "
         "only)";
}

// Measured on 2 cores (docs/BENCHMARKS.md): CBC solves vgg16_cifar's MILP (33k variables)
// in 15 s, and has not finished the root LP of resnet18_cifar's (136k) after 200 s. Past
// about this many variables per second of limit it only burns the limit, so it is not run.
constexpr double kCbcColumnsPerSecond = 1000;
// CBC takes this share of the time left; if it does not prove its incumbent optimal in it,
// large-neighbourhood search from the best schedule takes the rest. Measured on vgg16_cifar
// m4 70% (33k variables, docs/BENCHMARKS.md): CBC alone for 60 s left the start as it was
// (gap 2.0%), 30 s of search brought the gap to 0.4%; CBC proves the models it can prove
// here (vgg16 a72, linear) in well under half a minute.
constexpr double kCbcTimeShare = 0.5;
// With a node limit (tests), the search stops after this many windows, so that it ends by
// work as CBC does.
constexpr int kSearchWindowsWithNodeLimit = 16;
// The search also starts from another method's best start within this much of the best
// one. Measured on resnet18 m4 50% (60 s): from the eviction heuristic's 28.12 J alone it
// ends at 27.90 J; from Capuchin's 29.52 J at 27.64 J (27.70 J in 30 s).
constexpr double kSecondStartWithin = 0.1;
// Perturbed covers (starts.h): at most this many, the rest of them only if one of the first
// beats every start, and none started after this share of the time limit (without a node
// limit). On resnet18_cifar m4 30% the best of 40 was within 0.05% of the best of 250.
constexpr int kPerturbedTries = 48, kPerturbedProbe = 16;
constexpr double kPerturbedTimeShare = 0.2;
// The end of the limit kept for judging the candidates and reporting, in seconds.
constexpr double answer_margin_s(double time_limit_s) { return 0.2 + 0.02 * time_limit_s; }

}  // namespace

std::string_view solve_status_name(SolveStatus s) {
  switch (s) {
    case SolveStatus::Optimal: return "optimal";
    case SolveStatus::Feasible: return "feasible";
    case SolveStatus::Infeasible: return "infeasible";
    case SolveStatus::NoSolution: return "no solution found in the time limit";
  }
  return "unknown";
}

SimulationOptions SolveOptions::counting() const {
  SimulationOptions c;
  c.count_parameters = accounting == Accounting::Strict;
  c.count_gradients = c.count_parameters && count_gradients;
  c.optimizer = optimizer;
  return c;
}

std::string_view bound_source_name(BoundSource s) {
  switch (s) {
    case BoundSource::ComputeOnce: return "compute-once";
    case BoundSource::Covering: return "covering";
    case BoundSource::Cbc: return "CBC";
  }
  return "unknown";
}

namespace {

// `o.time_limit_s` counts from `began`: the heuristic and the model take from CBC's share.
// What the solve is doing, for the status line: the phase, with the best schedule and the
// bound once known.
std::string solve_status(std::string_view phase, double best, double bound, SolveObjective objective) {
  const char* unit = objective == SolveObjective::Energy ? "J" : "s";
  if (!(best < INFINITY)) return fmt::format("{}; bound {:.6g} {}", phase, bound, unit);
  return fmt::format("{}; best {:.6g} {}, bound {:.6g} {} (gap {:.2f}%)", phase, best, unit, bound, unit,
                     best > 0 ? 100 * (best - bound) / best : 0.0);
}

SolveResult solve_untimed(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                          std::chrono::steady_clock::time_point began, StatusLine* status) {
  SolveResult result;
  const bool strict = o.accounting == Accounting::Strict;
  const SimulationOptions sim = o.counting();  // the simulator judges every schedule; its figures are reported
  const std::int64_t fixed_bytes = counted_fixed_bytes(g, sim);
  const std::int64_t needed = smallest_workable_budget(g, sim).bytes;
  if (o.ram_budget_bytes < needed) {
    result.status = SolveStatus::Infeasible;
    result.smallest_feasible_budget = needed;
    result.message = fmt::format(
        "a budget of {} cannot hold the largest node and its inputs{}: no schedule needs less than {}",
        format_bytes_exact(o.ram_budget_bytes), fixed_bytes > 0 ? " besides the fixed memory" : "",
        format_bytes_exact(needed));
    return result;
  }

  const auto judge = [&](const Schedule& s) {
    SimulationOptions options = sim;
    if (strict) options.ram_budget_bytes = o.ram_budget_bytes;
    return simulate(g, costs, plan_from_schedule(s, g), options);
  };

  // Checkpoint-all when it fits, else the eviction heuristic's and the fast baselines'
  // schedules: CBC's start, and the answer when CBC cannot improve on them (or is not asked).
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point from) {
    return std::chrono::duration<double>(Clock::now() - from).count();
  };
  // The proven lower bound (compute-once, covering, ...), on the other core while the starts
  // are found; CBC's, when it runs, may raise it.
  auto bound_found = std::async(std::launch::async, [&] {
    const auto bound_began = Clock::now();
    solve_internal::ProvenBound b = solve_internal::proven_bound(g, costs, o, std::max(0.1, o.time_limit_s / 4));
    result.bound_time_s = seconds_since(bound_began);
    return b;
  });
  if (status) status->set("starts (the eviction heuristic, Capuchin, DTR) and the lower bound");
  // The time limit holds for the starts too (resnet50's take 14 s; `--time-limit 5` got its
  // answer after 14 s): past it, the first schedule found is enough. Not under a work limit.
  const auto limit_end = [&](double seconds) {
    return began + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  const solve_internal::StopAt starts_until =
      o.max_nodes ? std::nullopt : std::optional(limit_end(o.time_limit_s - answer_margin_s(o.time_limit_s)));
  std::vector<solve_internal::StartSchedule> starts =
      solve_internal::start_schedules(g, costs, o, sim, fixed_bytes, starts_until);
  result.starts_time_s = seconds_since(began);
  const solve_internal::ProvenBound proven = bound_found.get();
  const LowerBound& bound = proven.bound;
  result.best_bound = bound.value;
  result.bound_source = bound.source;
  // A start this close to the bound is reported optimal (o.relative_gap): nothing more is run.
  const auto best_start_within_gap = [&] {
    return !starts.empty() && starts.front().objective * (1 - o.relative_gap) <= result.best_bound * (1 + 1e-12);
  };
  // The heuristic again from the bound's cover, where no start is within the gap: the
  // cover costs what the bound says, and often needs little to become a schedule.
  const auto best_start = [&] { return starts.empty() ? INFINITY : starts.front().objective; };
  if (!best_start_within_gap() && !o.stop_requested()) {
    if (status) status->set(solve_status("starts from the bound's cover", best_start(), result.best_bound, o.objective));
    const auto cover_began = Clock::now();
    for (auto& s : solve_internal::cover_starts(g, costs, o, sim, fixed_bytes, proven.cover, starts_until))
      starts.push_back(std::move(s));
    solve_internal::sort_cheapest_first(starts);
    if (!best_start_within_gap()) {
      const solve_internal::PerturbedTries tries{
          .tries = kPerturbedTries,
          .probe = kPerturbedProbe,
          .to_beat = starts.empty() ? INFINITY : starts.front().objective,
          .stop_at = o.max_nodes ? std::nullopt : std::optional(limit_end(kPerturbedTimeShare * o.time_limit_s))};
      for (auto& s : solve_internal::perturbed_cover_starts(g, costs, o, sim, fixed_bytes, proven.cover, tries))
        starts.push_back(std::move(s));
      solve_internal::sort_cheapest_first(starts);
    }
    result.starts_time_s += seconds_since(cover_began);
  }
  if (bound.infeasible && starts.empty()) {
    result.status = SolveStatus::Infeasible;
    result.message = o.deadline_s
                         ? "no schedule meets the budget and the deadline: even restoring the fewest tensors by the "
                           "cheapest means (the covering bound) needs more memory or time; raise the budget or the "
                           "deadline" + deadline_counted(o)
                         : "no schedule fits the budget: even restoring the fewest tensors by the cheapest means (the "
                           "covering bound) needs more memory; raise the budget";
    return result;
  }

  // Candidates to report: CBC's schedule and the starts; the cheapest valid one is reported.
  struct Candidate {
    Schedule schedule;
    double objective;  // energy (J) or time (s)
    bool proven_optimal = false;
    std::optional<double> milp_objective;  // what the MILP says it costs, checked against the simulator
  };
  std::vector<Candidate> candidates;
  std::vector<std::optional<double>> start_milp_objectives(starts.size());
  const bool start_within_gap = best_start_within_gap();
  if (!o.heuristic_only) {
    // Counted before the model is built: on a large graph building it takes longer than the
    // limit, and a model too large for CBC is not solved whole (the windows below build their own).
    const std::int64_t columns = solve_internal::whole_model_columns(g);
    const bool too_large = static_cast<double>(columns) > kCbcColumnsPerSecond * o.time_limit_s;
    result.variables = static_cast<int>(std::min<std::int64_t>(columns, std::numeric_limits<int>::max()));
    const auto model_began = Clock::now();
    std::optional<solve_internal::MilpModel> model;
    std::optional<std::size_t> search_start;  // the cheapest start (the model accepts, if built)
    bool cbc_left_gap = false;                // CBC ran and did not prove an optimum
    std::optional<Schedule> cbc_unproven;     // its incumbent then
    if (!too_large || !o.solution_path.empty() || !o.write_model_path.empty()) {
      model.emplace(g, costs, o, o.ram_budget_bytes - fixed_bytes);
      POET_CHECK(model->columns() == columns, "whole_model_columns counts the model's columns");
      result.constraints = model->rows();
      if (!o.write_model_path.empty()) solve_internal::write_model(*model, o.write_model_path);
      const double scale = model->objective_scale();
      for (std::size_t k = 0; k < starts.size(); ++k) {
        auto x = model->assignment(starts[k].schedule);
        const bool accepted = model->satisfied_by(x);
        POET_CHECK(accepted || starts[k].schedule.method != "eviction",
                   "the eviction heuristic counts memory as the MILP does");
        if (!accepted) continue;
        start_milp_objectives[k] = model->objective_value(x) * scale;
        if (!search_start) search_start = k;
      }
    } else if (!starts.empty()) {
      // Unbuilt, the search starts from the cheapest start: its windows that the MILP does
      // not accept it in are skipped (resnet18 m4 50%: only Capuchin finds a schedule).
      search_start = 0;
    }
    result.model_time_s = seconds_since(model_began);
    if (!o.solution_path.empty()) {
      // Another solver's answer: rounded to a schedule, then held to this model's constraints.
      const double scale = model->objective_scale();
      const auto x = model->assignment(model->schedule(solve_internal::read_solution_file(*model, o.solution_path)));
      if (!model->satisfied_by(x))
        throw InputError(fmt::format("--solution: '{}' breaks this model's constraints; it must solve the model written "
                                     "for the same graph, platform, budget, deadline and options",
                                     o.solution_path));
      candidates.push_back(
          {model->schedule(x), model->objective_value(x) * scale, false, model->objective_value(x) * scale});
    } else if (start_within_gap) {
      result.message = fmt::format("the best start ({}) is within the {:.2g}% gap asked of the bound; CBC not run",
                                   starts.front().schedule.method, 100 * o.relative_gap);
    } else if (too_large) {
      result.message = fmt::format("CBC not run: its root LP of {} variables takes longer than the {} limit "
                                   "here; {} (--time-limit {:.0f} lets CBC try)",
                                   format_grouped(columns), format_seconds(o.time_limit_s),
                                   starts.empty() ? std::string("no start was found either")
                                                  : "the best start (" + starts.front().schedule.method + ") stands",
                                   std::ceil(static_cast<double>(columns) / kCbcColumnsPerSecond));
    } else {
      if (!starts.empty() && o.progress)
        print_above_status(fmt::format("  start: {} {:.6g} ({} bound {:.6g}); CBC has up to {:.0f} s",
                                       starts.front().schedule.method, starts.front().objective,
                                       bound_source_name(result.bound_source), result.best_bound,
                                       o.time_limit_s - seconds_since(began)));
      if (status) status->set(solve_status("CBC on the whole model", best_start(), result.best_bound, o.objective));
      const double scale = model->objective_scale();
      // CBC's start: the cheapest start the model accepts (the baselines' may count a
      // deadline or memory otherwise than the MILP).
      std::optional<std::vector<double>> mip_start;
      if (search_start) mip_start = model->assignment(starts[*search_start].schedule);
      const auto run_cbc = [&](bool preprocess) {
        SolveOptions remaining = o;
        // With no start the window search after CBC has nothing to improve unless CBC finds a
        // schedule: CBC takes the whole time left (it stopped at half the limit, and the
        // answer said "within the 30 s limit" after 15 s).
        const double left = o.time_limit_s - seconds_since(began);
        remaining.time_limit_s =
            std::max(0.1, starts.empty() ? left - answer_margin_s(o.time_limit_s) : kCbcTimeShare * left);
        return solve_internal::run_cbc_guarded(*model, remaining, mip_start ? &*mip_start : nullptr, preprocess);
      };
      const auto cbc_began = Clock::now();
      solve_internal::GuardedOutcome guarded = run_cbc(true);
      if (!guarded.crash.empty()) {
        if (o.progress) print_above_status(fmt::format("  CBC crashed ({}); again without preprocessing", guarded.crash));
        guarded = run_cbc(false);
        if (!guarded.crash.empty())
          throw InternalError(fmt::format("CBC crashed ({}) with and without preprocessing; write the model "
                                          "with --write-model and try another solver",
                                          guarded.crash));
      }
      result.cbc_time_s = seconds_since(cbc_began);
      const solve_internal::CbcOutcome& cbc = guarded.outcome;
      result.nodes = cbc.nodes;
      cbc_left_gap = !cbc.proven_optimal;
      if (cbc.bound * scale > result.best_bound) {
        result.best_bound = cbc.bound * scale;
        result.bound_source = BoundSource::Cbc;
      }
      if (cbc.solution) {
        candidates.push_back(
            {model->schedule(*cbc.solution), cbc.objective * scale, cbc.proven_optimal, cbc.objective * scale});
        if (!cbc.proven_optimal) cbc_unproven = candidates.back().schedule;
      }
      if (cbc.proven_infeasible && !guarded.timed_out && starts.empty()) {
        result.status = SolveStatus::Infeasible;
        result.message = o.deadline_s
                             ? "CBC proved that no schedule meets the budget and the deadline" + deadline_counted(o)
                             : std::string("CBC proved that no schedule fits the budget; raise the budget");
        return result;
      }
    }
    // Too large for CBC within the limit, or CBC stopped short of a proof: large-neighbourhood
    // search with the MILP's windows from the cheaper of the best start the model accepts and
    // CBC's incumbent.
    std::optional<std::pair<Schedule, double>> from;  // and its objective, the simulator's
    if (search_start) from.emplace(starts[*search_start].schedule, starts[*search_start].objective);
    if (cbc_unproven && model->satisfied_by(model->assignment(*cbc_unproven))) {
      try {  // the MILP counts memory per stage; the simulator also counts transfers in flight
        const SimulationResult simulated = judge(*cbc_unproven);
        const double objective = o.objective == SolveObjective::Energy ? simulated.total_energy_j() : simulated.compute_time_s;
        if (!from || objective < from->second) from.emplace(*cbc_unproven, objective);
      } catch (const InvalidPlan&) {
      }
    }
    if (o.solution_path.empty() && (too_large || cbc_left_gap) && from && !start_within_gap) {
      // Unbuilt, the search also runs from the best start of another method when it is
      // nearly as cheap: windows do not move a schedule far, and the cheapest start is not
      // always the one whose neighbourhood holds the best schedule (docs/BENCHMARKS.md).
      std::vector<std::pair<Schedule, double>> froms{*from};
      if (too_large)
        for (const solve_internal::StartSchedule& other : starts)
          if (other.schedule.method != from->first.method &&
              other.objective <= from->second * (1 + kSecondStartWithin)) {
            froms.emplace_back(other.schedule, other.objective);
            break;
          }
      const auto search_end = limit_end(o.time_limit_s - answer_margin_s(o.time_limit_s));
      // A schedule within the gap asked of the bound ends the search: it would be reported optimal.
      const double good_enough = o.relative_gap < 1 ? result.best_bound / (1 - o.relative_gap) : INFINITY;
      double best_so_far = std::min(best_start(), from->second);
      for (std::size_t k = 0; k < froms.size(); ++k) {
        const std::string phase = fmt::format("window search from {}'s schedule", froms[k].first.method);
        const auto show = [&](double best) {
          best_so_far = std::min(best_so_far, best);
          if (status) status->set(solve_status(phase, best_so_far, result.best_bound, o.objective));
        };
        show(best_so_far);
        // An equal share of the time left; a search that ends early leaves its time to the next.
        const solve_internal::SearchLimits limits{
            Clock::now() + (search_end - Clock::now()) / static_cast<int>(froms.size() - k),
            o.max_nodes ? std::optional<int>(kSearchWindowsWithNodeLimit) : std::nullopt, good_enough, show};
        const solve_internal::SearchResult found =
            solve_internal::neighbourhood_search(g, costs, o, o.ram_budget_bytes - fixed_bytes, froms[k].first, judge, limits);
        result.search_time_s += found.seconds;
        result.windows_solved += found.windows_solved;
        result.windows_improved += found.windows_improved;
        if (found.windows_improved > 0)
          candidates.push_back({found.schedule, found.objective, false, found.milp_objective});
        if (found.objective <= good_enough) break;
      }
      if (result.windows_improved > 0)
        result.message = fmt::format("{}; its windows improved the starts in {} of {} solved",
                                     too_large ? fmt::format("CBC not run on the whole model ({} variables)",
                                                             format_grouped(columns))
                                               : "CBC did not prove its schedule optimal",
                                     result.windows_improved, result.windows_solved);
    }
  }
  for (std::size_t k = 0; k < starts.size(); ++k)
    candidates.push_back({starts[k].schedule, starts[k].objective, k == 0 && start_within_gap, start_milp_objectives[k]});
  if (candidates.empty()) {
    if (result.message.empty())
      result.message = o.heuristic_only ? "neither the eviction heuristic nor Capuchin or DTR found a schedule for this "
                                          "budget and deadline; try the MILP (without --heuristic) or a larger budget"
                                        : fmt::format("CBC found no schedule within the {:.0f} s limit; give it more "
                                                      "time (--time-limit) or a larger budget",
                                                      o.time_limit_s);
    return result;
  }

  // CBC may reject its start (tolerances) and stop at a worse incumbent: the cheapest wins.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.objective < b.objective; });
  std::string rejected;
  for (Candidate& c : candidates) {
    try {
      result.simulation = judge(c.schedule);
    } catch (const InvalidPlan& e) {
      // The MILP counts memory per stage; the simulator also counts transfers in flight.
      if (rejected.empty()) rejected = fmt::format("{}'s schedule fails in the simulator: {}", c.schedule.method, e.what());
      continue;
    }
    result.schedule = std::move(c.schedule);
    result.objective = o.objective == SolveObjective::Energy ? result.simulation->total_energy_j()
                                                                    : result.simulation->compute_time_s;
    if (c.milp_objective)
      POET_CHECK(std::fabs(*c.milp_objective - result.objective) <= 1e-6 * std::max(1.0, result.objective),
                 fmt::format("the MILP's objective {} and the simulator's {} disagree", *c.milp_objective,
                             result.objective));
    result.best_bound = std::min(result.best_bound, result.objective);
    result.gap = result.objective > 0 ? (result.objective - result.best_bound) / result.objective : 0;
    result.status = c.proven_optimal || result.gap <= o.relative_gap ? SolveStatus::Optimal : SolveStatus::Feasible;
    if (!rejected.empty()) result.message = rejected;
    return result;
  }
  result.message = rejected;
  return result;
}

}  // namespace

SolveResult solve(const Graph& g, const GraphCosts& costs, const SolveOptions& options) {
  const auto began = std::chrono::steady_clock::now();
  if (!options.write_model_path.empty()) solve_internal::check_model_path(options.write_model_path);
  if (!options.write_start_path.empty()) check_output_path(options.write_start_path, "--write-start");
  std::optional<StatusLine> status;
  if (options.progress) status.emplace("  solve", options.time_limit_s);
  SolveResult result = solve_untimed(g, costs, options, began, status ? &*status : nullptr);
  status.reset();
  result.stopped = options.stop_requested();
  if (!options.write_start_path.empty() && result.schedule) {
    // The model again (a fraction of a second where it is worth writing): the schedule's
    // columns, U and FREE derived, as another solver's start.
    const solve_internal::MilpModel model(g, costs, options,
                                          options.ram_budget_bytes - counted_fixed_bytes(g, options.counting()));
    solve_internal::write_solution_file(model, model.assignment(*result.schedule), options.write_start_path);
  }
  result.solve_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return result;
}

}  // namespace poet
