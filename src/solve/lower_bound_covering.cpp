// Why the covering bound is valid: every feasible point of the MILP (milp_model.h) maps to a
// feasible point of the covering problem below that costs at most its objective.
//
// Stage t's memory row at step t: U[t][t] = sum_i mem(i) (S_RAM[t][i] + R[t][i] [+ M_in[t][i]
// strict]) - sum over edges (a, k), k < t, of FREE[t][a,k] mem(a), and U[t][t] <= B (the
// activation budget). Split the sum by tensor:
// - node t itself: R[t][t] = 1, never freed before step t: contributes mem(t);
// - an input a of t: resident (the input row: S_RAM[t][a] or R[t][a], or in strict
//   accounting M_in[t][a], whose buffer the row counts), and never freed before step t,
//   since FREE[t][a,k] needs no later consumer of a computed in stage t, and t is one:
//   contributes >= mem(a);
// - a tensor a < t in a *gap* at t (its previous use, or a itself, before t, its next use
//   after t): contributes >= mem(a) unless S_RAM[t][a] = 0, or it is freed before step t,
//   which needs S_RAM[t+1][a] = 0. Either way a is *absent* at stage t or t+1 of its gap;
// - any other tensor: >= 0, since it is freed at most once in a stage (FREE needs no later
//   consumer in the stage; an input read twice by one consumer is one edge) and only when
//   resident (its consumer's input row).
// So if a gap-at-t tensor set P stays present, mem(t) + mem(inputs of t) + mem(P) <= B: the
// tensors absent must cover demand(t) = mem(t) + mem(inputs) + mem(gap tensors at t) - B.
// This is the covering row of stage t.
//
// An absence at stage s (or s + 1) of the gap (p, u) of tensor a (p < s < u; u the next use)
// forces a restoration R[s'][a] = 1 or M_in[s'][a] = 1 (s <= s' <= u): at stage u a is
// resident (input row), recomputed or (strict) paged in; if resident, follow S_RAM back to
// the absence: the first stage where it turns 1 follows one with R or M_in (the keep row).
// These R and M_in lie in stages p+1..u, which are disjoint for the gaps of one tensor:
// distinct gaps need distinct restorations, each costing compute(a) or pagein(a) (column r
// or p of the gap, at most one counted, since one restoration suffices for the covering
// row). A page-in needs S_AUX, which needs one page-out of a at some stage: column z_a,
// shared by all gaps of a. R[t][t] = 1 costs the compute-once total, which the
// restorations (all with i < t) do not touch.
//
// A recomputation needs its inputs resident. Take the last restoration of a gap (p, u) of a
// (it makes a resident for u; before it a may be absent, after it a is present) and let it
// be a recomputation in stage s*. An input x that only a reads (one edge) is dead after
// stage a <= p in compute-once order, so no covering row counts it, yet it is resident at
// s*: either it was restored after a's computation (a recomputation or a page-in; charged
// to one column per x, shared by all of a's gaps, since no gap of x lies after a), or it
// stayed resident through every stage from a to s*, where it adds mem(x) to the memory
// row that the covering row drops; at the stages of the gap before s*, a's absence then
// frees at most mem(a) - mem(x) net, and after s* a is present. So a recomputation column
// per choice of which such inputs are restored (the rest kept), freeing mem(a) less the
// kept ones (only those that free something), with at most one restoration column per gap
// charged. The deadline row
// holds the same sums in time: compute-once time + restorations' times (+ paging in strict)
// <= deadline. Everything the covering problem charges is a distinct term of the MILP's
// objective, so its optimum (and CBC's proven bound on it) is <= the MILP's optimum.
#include "lower_bound_covering.h"

#include <CbcModel.hpp>
#include <OsiClpSolverInterface.hpp>

#include <algorithm>
#include <cmath>

#include "cbc_runner.h"

namespace poet::solve_internal {
namespace {

struct Gap {
  std::size_t tensor, previous_use, next_use;  // stages previous_use+1 .. next_use-1 are inside
};

struct CoveringProblem {
  std::vector<double> cost, upper;
  std::vector<Row> rows;
  bool infeasible = false;
};

// The covering problem in units of the largest tensor and the compute-once objective.
CoveringProblem build(const Graph& g, const GraphCosts& costs, const SolveOptions& o, std::int64_t budget) {
  const std::size_t n = g.size();
  const auto users = g.users();
  double max_bytes = 1;
  for (const auto& c : costs.nodes) max_bytes = std::max(max_bytes, static_cast<double>(c.bytes));
  const auto mem = [&](std::size_t i) { return static_cast<double>(costs.nodes[i].bytes) / max_bytes; };
  const bool energy = o.objective == SolveObjective::Energy;
  const double scale =
      energy ? std::max(costs.total_compute_energy_j, 1e-30) : std::max(costs.total_compute_time_s, 1e-30);
  const bool remat = o.mode != SolveMode::PagingOnly, paging = o.mode != SolveMode::RematOnly;
  const bool strict = o.accounting == Accounting::Strict;

  // The tensors' gaps, and for each stage the gaps that contain it.
  std::vector<Gap> gaps;
  std::vector<std::vector<std::size_t>> gaps_at(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::size_t> uses;
    for (NodeId u : users[i]) uses.push_back(static_cast<std::size_t>(u));
    std::sort(uses.begin(), uses.end());
    uses.erase(std::unique(uses.begin(), uses.end()), uses.end());
    std::size_t previous = i;
    for (std::size_t u : uses) {
      if (u > previous + 1) {
        for (std::size_t t = previous + 1; t < u; ++t) gaps_at[t].push_back(gaps.size());
        gaps.push_back({i, previous, u});
      }
      previous = u;
    }
  }
  CoveringProblem p;
  // Columns per gap (restore by recomputing, by paging in), then one page-out per tensor.
  // A recomputation has one column per way of providing the inputs that only it reads
  // (kept, or restored: w), with the memory it frees net of the inputs kept.
  struct Recompute {
    int column;
    double frees;                    // in units of the largest tensor
    std::vector<std::size_t> restored;  // inputs restored for it
  };
  std::vector<std::vector<Recompute>> recompute(gaps.size());
  std::vector<int> pagein(gaps.size(), -1), pageout(n, -1), restore_input(n, -1);
  const auto add_column = [&](double cost) {
    p.cost.push_back(cost);
    p.upper.push_back(1);
    return static_cast<int>(p.cost.size()) - 1;
  };
  // The inputs only `a` reads (one edge), which nothing needs after a's computation; past
  // this many, one column that assumes them free (still valid, weaker).
  constexpr std::size_t kMaxPrivateInputs = 3;
  const auto private_inputs = [&](std::size_t a) {
    std::vector<std::size_t> out;
    for (NodeId x : g.node(static_cast<NodeId>(a)).inputs)
      if (users[static_cast<std::size_t>(x)].size() == 1) out.push_back(static_cast<std::size_t>(x));
    if (out.size() > kMaxPrivateInputs) out.clear();
    return out;
  };
  // The least a restoration of x costs: a recomputation or a page-in.
  const auto restore_cost = [&](std::size_t x) {
    const NodeCost& c = costs.nodes[x];
    double least = INFINITY;
    if (remat) least = energy ? c.compute_energy_j : c.compute_time_s;
    if (paging) least = std::min(least, energy ? c.pagein_energy_j : 0.0);
    return least / scale;
  };
  const auto add_recomputations = [&](std::size_t k) {
    const std::size_t a = gaps[k].tensor;
    const NodeCost& c = costs.nodes[a];
    const double cost = (energy ? c.compute_energy_j : c.compute_time_s) / scale;
    const std::vector<std::size_t> inputs = private_inputs(a);
    for (std::size_t restored_set = 0; restored_set < (std::size_t{1} << inputs.size()); ++restored_set) {
      Recompute r{-1, mem(a), {}};
      for (std::size_t j = 0; j < inputs.size(); ++j)
        if (restored_set >> j & 1)
          r.restored.push_back(inputs[j]);
        else
          r.frees -= mem(inputs[j]);
      if (r.frees <= 1e-12) continue;  // frees nothing: never part of a cover
      r.column = add_column(cost);
      for (std::size_t x : r.restored)
        if (restore_input[x] < 0) restore_input[x] = add_column(restore_cost(x));
      recompute[k].push_back(std::move(r));
    }
  };
  std::vector<Row> covers;
  for (std::size_t t = 0; t < n; ++t) {
    std::vector<std::size_t> inputs;
    for (NodeId a : g.node(static_cast<NodeId>(t)).inputs) inputs.push_back(static_cast<std::size_t>(a));
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    double demand = mem(t) - static_cast<double>(budget) / max_bytes;
    for (std::size_t a : inputs) demand += mem(a);
    for (std::size_t k : gaps_at[t]) demand += mem(gaps[k].tensor);
    if (demand <= 1e-12) continue;
    Row cover{{}, {}, demand, INFINITY};
    for (std::size_t k : gaps_at[t]) {
      const std::size_t a = gaps[k].tensor;
      const NodeCost& c = costs.nodes[a];
      if (remat && recompute[k].empty()) add_recomputations(k);
      if (paging && pagein[k] < 0) {
        pagein[k] = add_column(energy ? c.pagein_energy_j / scale : 0);
        if (pageout[a] < 0) pageout[a] = add_column(energy ? c.pageout_energy_j / scale : 0);
      }
      for (const Recompute& r : recompute[k]) {
        cover.columns.push_back(r.column);
        cover.values.push_back(r.frees);
      }
      if (pagein[k] >= 0) {
        cover.columns.push_back(pagein[k]);
        cover.values.push_back(mem(a));
      }
    }
    covers.push_back(std::move(cover));
  }
  for (Row& cover : covers) {
    double most = 0;
    for (double v : cover.values) most += v;
    if (most < cover.lower - 1e-9) p.infeasible = true;  // all of it absent would not do either
    p.rows.push_back(std::move(cover));
  }
  for (std::size_t k = 0; k < gaps.size(); ++k) {
    Row one_restoration{{}, {}, -INFINITY, 1};  // the last restoration in the gap, charged once
    for (const Recompute& r : recompute[k]) {
      one_restoration.columns.push_back(r.column);
      one_restoration.values.push_back(1);
      for (std::size_t x : r.restored) p.rows.push_back({{r.column, restore_input[x]}, {1, -1}, -INFINITY, 0});
    }
    if (pagein[k] >= 0) {
      one_restoration.columns.push_back(pagein[k]);
      one_restoration.values.push_back(1);
      p.rows.push_back({{pagein[k], pageout[gaps[k].tensor]}, {1, -1}, -INFINITY, 0});
    }
    if (one_restoration.columns.size() > 1) p.rows.push_back(std::move(one_restoration));
  }
  if (o.deadline_s) {
    // In units of the compute-once time; a hair of slack for the MILP's own tolerance.
    const double once = std::max(costs.total_compute_time_s, 1e-30);
    Row deadline{{}, {}, -INFINITY, (*o.deadline_s - costs.total_compute_time_s) / once + 1e-9};
    for (std::size_t k = 0; k < gaps.size(); ++k) {
      const NodeCost& c = costs.nodes[gaps[k].tensor];
      for (const Recompute& r : recompute[k]) deadline.columns.push_back(r.column), deadline.values.push_back(c.compute_time_s / once);
      if (strict && pagein[k] >= 0) deadline.columns.push_back(pagein[k]), deadline.values.push_back(c.pagein_time_s / once);
    }
    for (std::size_t a = 0; a < n; ++a)
      if (strict && pageout[a] >= 0) deadline.columns.push_back(pageout[a]), deadline.values.push_back(costs.nodes[a].pageout_time_s / once);
    if (deadline.upper < 0) p.infeasible = true;  // compute-once alone misses it
    p.rows.push_back(std::move(deadline));
  }
  return p;
}

}  // namespace

std::optional<CoveringBound> covering_lower_bound(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                                  std::int64_t activation_budget, long node_limit, double seconds) {
  const double compute_once =
      o.objective == SolveObjective::Energy ? costs.total_compute_energy_j : costs.total_compute_time_s;
  const double scale = std::max(compute_once, 1e-30);
  const CoveringProblem p = build(g, costs, o, activation_budget);
  if (p.infeasible) return std::nullopt;
  CoveringBound out;
  out.bound = compute_once;
  out.columns = static_cast<int>(p.cost.size());
  out.rows = static_cast<int>(p.rows.size());
  if (p.cost.empty()) return out;

  const std::vector<double> lower(p.cost.size(), 0.0);
  OsiClpSolverInterface solver;
  load_rows(solver, p.rows, lower, p.upper, p.cost);
  for (int c = 0; c < out.columns; ++c) solver.setInteger(c);
  CbcModel cbc(solver);
  cbc.setLogLevel(0);
  cbc.messageHandler()->setLogLevel(0);
  cbc.setMaximumNodes(static_cast<int>(std::min<long>(node_limit, 1L << 30)));
  cbc.setMaximumSeconds(seconds);
  cbc.branchAndBound();
  if (cbc.isProvenInfeasible()) return std::nullopt;
  out.proven = cbc.isProvenOptimal();
  if (out.proven && cbc.bestSolution() != nullptr) {
    // The optimum from the rounded solution, exact (CBC's bound carries its tolerances).
    double value = 0;
    for (int c = 0; c < out.columns; ++c) value += p.cost[static_cast<std::size_t>(c)] * std::round(cbc.bestSolution()[c]);
    out.bound = compute_once + scale * value;
  } else {
    out.bound = compute_once + scale * std::max(0.0, cbc.getBestPossibleObjValue() * (1 - 1e-6));
  }
  return out;
}

}  // namespace poet::solve_internal
