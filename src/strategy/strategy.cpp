#include "poet/strategy/strategy.h"

#include <fmt/format.h>

#include <algorithm>

#include "poet/baselines/capuchin.h"
#include "poet/baselines/chen.h"
#include "poet/baselines/dtr.h"
#include "poet/baselines/pofo.h"
#include "poet/baselines/revolve.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/solve/solve.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

using Method = StrategyResult (*)(const Graph&, const GraphCosts&, const StrategyRequest&);

StrategyResult from_baseline(BaselineResult r) {
  StrategyResult out;
  out.status = r.found() ? "found" : r.applies ? "no schedule" : "does not apply";
  out.detail = r.found() ? std::move(r.choice) : std::move(r.reason);
  out.schedule = std::move(r.schedule);
  out.simulation = std::move(r.simulation);
  return out;
}

StrategyResult checkpoint_all(const Graph& g, const GraphCosts& costs, const StrategyRequest& request) {
  BaselineResult r;
  r.schedule = checkpoint_all_schedule(g);
  r.simulation = simulate_baseline(g, costs, *r.schedule, request.budget);
  if (!fits_budget(*r.simulation, request.budget)) {
    r = no_schedule(
        fmt::format("it keeps every activation, and needs {}", format_bytes_exact(r.simulation->peak_bytes)));
  }
  return from_baseline(std::move(r));
}

using Baseline = BaselineResult (*)(const Graph&, const GraphCosts&, const SimulationOptions&);

template <Baseline baseline>
StrategyResult baseline_method(const Graph& g, const GraphCosts& costs, const StrategyRequest& request) {
  return from_baseline(baseline(g, costs, request.budget));
}

template <SolveMode mode, SolveObjective objective>
StrategyResult solver(const Graph& g, const GraphCosts& costs, const StrategyRequest& request) {
  SolveOptions o;
  o.ram_budget_bytes = *request.budget.ram_budget_bytes;
  o.accounting = request.budget.count_parameters ? Accounting::Strict : Accounting::Reference;
  o.count_gradients = request.budget.count_gradients;
  o.optimizer = request.budget.optimizer;
  o.deadline_s = request.deadline_s;
  o.mode = mode;
  o.objective = objective;
  o.time_limit_s = request.time_limit_s;
  o.relative_gap = request.relative_gap;
  o.max_nodes = request.max_nodes;
  o.progress = request.progress;
  SolveResult r = solve(g, costs, o);
  StrategyResult out;
  out.status = solve_status_name(r.status);
  out.detail = std::move(r.message);
  out.gap = r.gap;
  out.schedule = std::move(r.schedule);
  out.simulation = std::move(r.simulation);
  return out;
}

struct Entry {
  std::string_view name;
  StrategyKind kind;
  Method method;
};

// The baselines first (the trivial one leading), then the optimizer's modes.
constexpr Entry kStrategies[] = {
    {"checkpoint_all", StrategyKind::Oracle, checkpoint_all},
    {"chen_sqrt", StrategyKind::Baseline, baseline_method<chen_sqrt_for_budget>},
    {"chen_greedy", StrategyKind::Baseline, baseline_method<chen_greedy_for_budget>},
    {"revolve", StrategyKind::Baseline, baseline_method<revolve_for_budget>},
    {"dtr", StrategyKind::Baseline, baseline_method<dtr_for_budget>},
    {"capuchin", StrategyKind::Baseline, baseline_method<capuchin_for_budget>},
    {"pofo", StrategyKind::Baseline, baseline_method<pofo_for_budget>},
    {"checkmate", StrategyKind::Solver, solver<SolveMode::RematOnly, SolveObjective::Time>},
    {"poet_remat", StrategyKind::Solver, solver<SolveMode::RematOnly, SolveObjective::Energy>},
    {"poet_paging", StrategyKind::Solver, solver<SolveMode::PagingOnly, SolveObjective::Energy>},
    {"poet", StrategyKind::Solver, solver<SolveMode::RematAndPaging, SolveObjective::Energy>},
};

}  // namespace

std::vector<std::string> strategy_names(std::optional<StrategyKind> kind) {
  std::vector<std::string> out;
  for (const Entry& e : kStrategies)
    if (!kind || e.kind == *kind) out.emplace_back(e.name);
  return out;
}

bool is_strategy(std::string_view name, std::optional<StrategyKind> kind) {
  return std::any_of(std::begin(kStrategies), std::end(kStrategies),
                     [&](const Entry& e) { return e.name == name && (!kind || e.kind == *kind); });
}

std::string strategy_list() { return fmt::format("{}", fmt::join(strategy_names(), ", ")); }

StrategyResult schedule_for_budget(std::string_view name, const Graph& g, const GraphCosts& costs,
                                   const StrategyRequest& request) {
  const auto* e = std::find_if(std::begin(kStrategies), std::end(kStrategies), [&](const Entry& x) { return x.name == name; });
  if (e == std::end(kStrategies))
    throw InputError(fmt::format("unknown strategy '{}'; use one of {}", text_excerpt(name), strategy_list()));
  if (!request.budget.ram_budget_bytes && e->kind != StrategyKind::Oracle)
    throw InputError(fmt::format("strategy '{}' needs a RAM budget (--ram-budget, bytes or a percent)", name));
  return e->method(g, costs, request);
}

}  // namespace poet
