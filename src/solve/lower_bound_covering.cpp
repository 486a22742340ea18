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
//   contributes >= mem(a); unless t is computed in place over a, whose FREE then counts
//   at step t: a and t together contribute >= mem(t) (so the row leaves a out);
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
// be a recomputation in stage s*. An input x that a is the last to read is dead after
// stage a <= p in compute-once order, so no covering row counts it, yet it is resident at
// s*: either it was restored after a's computation (a recomputation or a page-in; charged
// to one column per x, shared by all of a's gaps, since no gap of x lies after a), or it
// stayed resident through every stage from a to s*, where it adds mem(x) to the memory
// row that the covering row drops; at the stages of the gap before s*, a's absence then
// frees at most mem(a) - mem(x) net, and after s* a is present. So a recomputation column
// per choice of which such inputs are restored (the rest kept), freeing mem(a) less the
// kept ones (only those that free something), with at most one restoration column per gap
// charged. The same holds one level down: x restored by a page-in costs its page-in; x
// restored by a recomputation in stage s' needs its own private inputs y at s', each
// restored after x's computation (no gap of y lies after x) or kept from its computation
// to s'. A restoration after a tensor's last reader's computation is one column of its
// kind (recomputed, paged in), shared by every recomputation relying on it: one event may
// serve several, and none of the tensor's own gap columns lies after that reader. The rows from the gap's start to s' - 1 then hold the kept y, those
// from s' on hold x: each row the recomputation relieves holds min(mem(x), mem(kept y)).
// So each x has a way per choice (kept: mem(x); paged in; recomputed, with each y kept or
// restored), and a recomputation of a a column per choice of ways.
//
// A recomputation needs room in its stage, too. With the last restoration of the gap a
// recomputation in stage s* (R[s*][a] = 1), a counts in the memory row of every stage from
// s* to u: computed at step a < s*, then kept into the next stage or read by u. So it can
// relieve only the rows of stages p+1 .. s*-1. Where recomputation_room.h proves that the
// stages after some s have no room to recompute a, s* <= s, and the recomputation columns
// of the gap relieve the rows up to s-1 only (none when no stage has room). The check runs
// on the recomputations an optimal cover uses, and the cover is solved again until it
// relies on no unchecked one: each round's problem is a relaxation of the MILP.
// The deadline row
// holds the same sums in time: compute-once time + restorations' times (+ paging in strict)
// <= deadline. Everything the covering problem charges is a distinct term of the MILP's
// objective, so its optimum (and CBC's proven bound on it) is <= the MILP's optimum.
#include "lower_bound_covering.h"

#include <CbcModel.hpp>
#include <OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "cbc_runner.h"
#include "poet/graph/op_table.h"
#include "recomputation_room.h"

namespace poet::solve_internal {
namespace {

// Rounds of "solve the cover, check the stages its recomputations need" at most, and CBC
// nodes per check: deterministic work limits.
constexpr std::size_t kRounds = 16;
constexpr long kRoomNodeLimit = 200;

struct Gap {
  std::size_t tensor, previous_use, next_use;  // stages previous_use+1 .. next_use-1 are inside
};

struct Gaps {
  std::vector<Gap> gaps;
  std::vector<std::vector<std::size_t>> at;  // per stage: the gaps that contain it
};

Gaps tensor_gaps(const Graph& g) {
  const std::size_t n = g.size();
  const auto users = g.users();
  Gaps out;
  out.at.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::size_t> uses;
    for (NodeId u : users[i]) uses.push_back(static_cast<std::size_t>(u));
    std::sort(uses.begin(), uses.end());
    uses.erase(std::unique(uses.begin(), uses.end()), uses.end());
    std::size_t previous = i;
    for (std::size_t u : uses) {
      if (u > previous + 1) {
        for (std::size_t t = previous + 1; t < u; ++t) out.at[t].push_back(out.gaps.size());
        out.gaps.push_back({i, previous, u});
      }
      previous = u;
    }
  }
  return out;
}

struct CoveringProblem {
  std::vector<double> cost, upper;
  std::vector<Row> rows;
  std::vector<int> recomputed_gap;  // per column: the gap a recomputation column restores, or -1
  bool infeasible = false;
};

// The covering problem in units of the largest tensor and the compute-once objective.
// `relieved_until[k]`: the last stage whose row a recomputation restoring gap k relieves.
CoveringProblem build(const Graph& g, const GraphCosts& costs, const SolveOptions& o, std::int64_t budget,
                      const Gaps& tensor_gaps, const std::vector<std::size_t>& relieved_until) {
  const std::vector<Gap>& gaps = tensor_gaps.gaps;
  const std::vector<std::vector<std::size_t>>& gaps_at = tensor_gaps.at;
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

  CoveringProblem p;
  // Columns per gap (restore by recomputing, by paging in), then one page-out per tensor.
  // A recomputation has one column per way of providing the inputs that only it needs
  // (kept, or restored: w), with the memory it frees net of what is kept for it.
  struct Recompute {
    int column;
    double frees;            // in units of the largest tensor
    std::vector<int> needs;  // the restorations of its inputs it relies on
  };
  std::vector<std::vector<Recompute>> recompute(gaps.size());
  std::vector<int> pagein(gaps.size(), -1), pageout(n, -1), page_input(n, -1), recompute_input(n, -1);
  const auto add_column = [&](double cost) {
    p.cost.push_back(cost);
    p.upper.push_back(1);
    p.recomputed_gap.push_back(-1);
    return static_cast<int>(p.cost.size()) - 1;
  };
  const auto once = [&](int& column, double cost) {
    if (column < 0) column = add_column(cost);
    return column;
  };
  // The inputs `a` is the last to read (a ReLU's output that its mask, its pool's indices
  // and the pool read), which nothing needs after a's computation; past this many, one
  // column that assumes them free (still valid, weaker).
  constexpr std::size_t kMaxPrivateInputs = 3;
  const auto private_inputs = [&](std::size_t a) {
    std::vector<std::size_t> out;
    for (NodeId id : g.node(static_cast<NodeId>(a)).inputs) {
      const auto x = static_cast<std::size_t>(id);
      const auto& readers = users[x];
      if (std::all_of(readers.begin(), readers.end(), [&](NodeId u) { return static_cast<std::size_t>(u) <= a; }) &&
          std::find(out.begin(), out.end(), x) == out.end())
        out.push_back(x);
    }
    if (out.size() > kMaxPrivateInputs) out.clear();
    return out;
  };
  const auto compute_cost = [&](std::size_t x) {
    const NodeCost& c = costs.nodes[x];
    return (energy ? c.compute_energy_j : c.compute_time_s) / scale;
  };
  const auto pagein_cost = [&](std::size_t x) { return (energy ? costs.nodes[x].pagein_energy_j : 0.0) / scale; };
  // The ways of having a's private input x at a's recomputation: kept (its bytes in every
  // row the recomputation relieves), paged in, or recomputed from its own private inputs
  // (`nested`; else they are taken as resident), each kept, recomputed or paged in. x
  // recomputed in stage s' with kept inputs Y: the rows before s' hold Y, those from s' on
  // hold x, so each holds min(mem(x), mem(Y)). Each way: the memory it takes from the
  // recomputation's relief, and the restorations it needs. A restoration of a tensor after
  // its last reader's computation is one column of its kind (recomputed, paged in),
  // whichever recomputations rely on it: one event may serve them all.
  struct Way {
    double holds;
    std::vector<int> needs;
  };
  constexpr std::size_t kMaxWays = 64;  // per recomputation; past it, no nesting
  const auto ways_of = [&](std::size_t x, bool nested) {
    std::vector<Way> ways{{mem(x), {}}};
    if (paging) ways.push_back({0, {once(page_input[x], pagein_cost(x))}});
    if (!remat) return ways;
    const std::vector<std::size_t> inputs = nested ? private_inputs(x) : std::vector<std::size_t>{};
    const std::size_t options = paging ? 3 : 2;  // per input: kept, recomputed, paged in
    std::size_t choices = 1;
    for (std::size_t j = 0; j < inputs.size(); ++j) choices *= options;
    for (std::size_t choice = 0; choice < choices; ++choice) {
      Way w{0, {once(recompute_input[x], compute_cost(x))}};
      for (std::size_t j = 0, rest = choice; j < inputs.size(); ++j, rest /= options) {
        const std::size_t y = inputs[j];
        if (rest % options == 0) w.holds += mem(y);
        else if (rest % options == 1) w.needs.push_back(once(recompute_input[y], compute_cost(y)));
        else w.needs.push_back(once(page_input[y], pagein_cost(y)));
      }
      w.holds = std::min(w.holds, mem(x));
      ways.push_back(std::move(w));
    }
    return ways;
  };
  const auto add_recomputations = [&](std::size_t k) {
    const std::size_t a = gaps[k].tensor;
    const std::vector<std::size_t> inputs = private_inputs(a);
    std::vector<std::vector<Way>> ways;
    std::size_t combinations = 1;
    for (std::size_t x : inputs) combinations *= ways_of(x, true).size();
    for (std::size_t x : inputs) ways.push_back(ways_of(x, combinations <= kMaxWays));
    // Every choice of one way per input (a mixed-radix count).
    std::vector<std::size_t> pick(inputs.size(), 0);
    for (bool more = true; more;) {
      Recompute r{-1, mem(a), {}};
      for (std::size_t j = 0; j < inputs.size(); ++j) {
        const Way& w = ways[j][pick[j]];
        r.frees -= w.holds;
        r.needs.insert(r.needs.end(), w.needs.begin(), w.needs.end());
      }
      if (r.frees > 1e-12) {  // else it frees nothing: never part of a cover
        r.column = add_column(compute_cost(a));
        p.recomputed_gap.back() = static_cast<int>(k);
        recompute[k].push_back(std::move(r));
      }
      more = false;
      for (std::size_t j = 0; j < pick.size() && !more; ++j) {
        if (++pick[j] < ways[j].size()) more = true;
        else pick[j] = 0;
      }
    }
  };
  std::vector<Row> covers;
  for (std::size_t t = 0; t < n; ++t) {
    std::vector<std::size_t> inputs;
    for (NodeId a : g.node(static_cast<NodeId>(t)).inputs) inputs.push_back(static_cast<std::size_t>(a));
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    double demand = mem(t) - static_cast<double>(budget) / max_bytes;
    const std::optional<NodeId> over = in_place_input(g, static_cast<NodeId>(t));
    for (std::size_t a : inputs)
      if (!over || a != static_cast<std::size_t>(*over)) demand += mem(a);
    for (std::size_t k : gaps_at[t]) demand += mem(gaps[k].tensor);
    if (demand <= 1e-12) continue;
    Row cover{{}, {}, demand, INFINITY};
    for (std::size_t k : gaps_at[t]) {
      const std::size_t a = gaps[k].tensor;
      const NodeCost& c = costs.nodes[a];
      const bool relieves = t <= relieved_until[k];
      if (remat && relieves && recompute[k].empty()) add_recomputations(k);
      if (paging && pagein[k] < 0) {
        pagein[k] = add_column(energy ? c.pagein_energy_j / scale : 0);
        if (pageout[a] < 0) pageout[a] = add_column(energy ? c.pageout_energy_j / scale : 0);
      }
      for (const Recompute& r : recompute[k]) {
        if (!relieves) break;
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
      for (int needed : r.needs) p.rows.push_back({{r.column, needed}, {1, -1}, -INFINITY, 0});
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
                                                  std::int64_t activation_budget, long node_limit,
                                                  std::size_t max_room_checks, double seconds) {
  const double compute_once =
      o.objective == SolveObjective::Energy ? costs.total_compute_energy_j : costs.total_compute_time_s;
  const double scale = std::max(compute_once, 1e-30);
  const auto began = std::chrono::steady_clock::now();
  const auto seconds_left = [&] {
    return seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  };
  const Gaps gaps = tensor_gaps(g);
  std::vector<std::size_t> relieved_until(gaps.gaps.size());
  std::vector<char> checked(gaps.gaps.size(), 0);
  for (std::size_t k = 0; k < gaps.gaps.size(); ++k) relieved_until[k] = gaps.gaps[k].next_use - 1;
  std::size_t checks = 0;

  std::optional<CoveringBound> out;
  for (std::size_t round = 0; round < kRounds; ++round) {
    const CoveringProblem p = build(g, costs, o, activation_budget, gaps, relieved_until);
    if (p.infeasible) return std::nullopt;
    CoveringBound bound;
    bound.bound = compute_once;
    bound.columns = static_cast<int>(p.cost.size());
    bound.rows = static_cast<int>(p.rows.size());
    if (p.cost.empty()) return bound;

    const std::vector<double> lower(p.cost.size(), 0.0);
    OsiClpSolverInterface solver;
    load_rows(solver, p.rows, lower, p.upper, p.cost);
    for (int c = 0; c < bound.columns; ++c) solver.setInteger(c);
    CbcModel cbc(solver);
    cbc.setLogLevel(0);
    cbc.messageHandler()->setLogLevel(0);
    cbc.setMaximumNodes(static_cast<int>(std::min<long>(node_limit, 1L << 30)));
    cbc.setMaximumSeconds(std::max(0.01, seconds_left()));
    cbc.branchAndBound();
    if (cbc.isProvenInfeasible()) return std::nullopt;
    bound.proven = cbc.isProvenOptimal();
    const double* solution = cbc.bestSolution();
    if (bound.proven && solution != nullptr) {
      // The optimum from the rounded solution, exact (CBC's bound carries its tolerances).
      double value = 0;
      for (int c = 0; c < bound.columns; ++c) value += p.cost[static_cast<std::size_t>(c)] * std::round(solution[c]);
      bound.bound = compute_once + scale * value;
    } else {
      bound.bound = compute_once + scale * std::max(0.0, cbc.getBestPossibleObjValue() * (1 - 1e-6));
    }
    // Every round's problem is a relaxation of the MILP: keep the best bound of any.
    if (!out || bound.bound > out->bound) out = bound;
    if (solution == nullptr) break;

    // The recomputations the cover relies on, not yet checked: the latest stage of its gap
    // with room for one bounds the stages it relieves (the rows after it see the tensor).
    bool restricted = false;
    for (int c = 0; c < bound.columns; ++c) {
      const int gap = p.recomputed_gap[static_cast<std::size_t>(c)];
      if (gap < 0 || std::round(solution[c]) < 1 || checked[static_cast<std::size_t>(gap)]) continue;
      const auto k = static_cast<std::size_t>(gap);
      checked[k] = 1;
      const Gap& x = gaps.gaps[k];
      std::size_t room = x.next_use;
      for (; room > x.previous_use && checks < max_room_checks && seconds_left() > 0; --room, ++checks)
        if (stage_has_room_to_recompute(g, costs, room, x.tensor, activation_budget, kRoomNodeLimit)) break;
      if (room == x.next_use) continue;
      relieved_until[k] = room - 1;  // room == previous_use: no stage has room, nothing relieved
      restricted = true;
    }
    if (!restricted) break;
  }
  return out;
}

}  // namespace poet::solve_internal
