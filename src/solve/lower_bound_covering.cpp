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
// be a recomputation in stage s*. Let b be the last reader of an input x of a. If s* <= b,
// x is within its compute-once life, where its own gaps pay for any absence: the
// recomputation relieves the rows p+1 .. b-1 at most (x "there"). If s* > b, no covering row
// after b counts x, yet x is resident at s*: either it was restored after b (a
// recomputation or a page-in; one column per x and kind, shared by every recomputation
// relying on it, since one event may serve several and no gap of x lies after b), or it
// stayed resident through every stage from b to s*, where it adds mem(x) to the memory
// rows after b that the covering rows drop: a's absence there frees mem(a) - mem(x) net.
// Several recomputations relying on the same kept x hold one tensor: each is charged its
// share, mem(a) / (the bytes of every reader of x that has a gap), so that their charges
// sum to at most mem(x). x paged in was paged out: one page-out per tensor serves every
// page-in of it. The same holds one level down: x restored by a recomputation in stage s'
// needs its own private inputs y (x their last reader) at s', each restored after x or kept
// from x to s'. The rows up to s' - 1 then hold the kept y, those from s' on hold x: each
// row after b the recomputation relieves holds min(mem(x), mem(kept y)). And x recomputed
// in stage s' < s* (s' with room to recompute x, recomputation_room.h) is held from s' on;
// recomputed in s* itself, s* needs room for both. So the rows from the latest such stage
// on hold x itself. Each x thus has a way per choice (there; kept; paged in; recomputed,
// with each y kept or restored), and a recomputation of a a column per choice of ways.
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

#include <CbcEventHandler.hpp>
#include <CbcHeuristic.hpp>
#include <CbcHeuristicFPump.hpp>
#include <CbcHeuristicGreedy.hpp>
#include <CbcHeuristicLocal.hpp>
#include <CbcModel.hpp>
#include <CglClique.hpp>
#include <CglFlowCover.hpp>
#include <CglGomory.hpp>
#include <CglKnapsackCover.hpp>
#include <CglMixedIntegerRounding2.hpp>
#include <CglProbing.hpp>
#include <CglTwomir.hpp>
#include <OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <map>
#include <set>

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

// Per tensor, the last node that reads it (itself when none does).
std::vector<std::size_t> last_readers(const Graph& g) {
  const auto users = g.users();
  std::vector<std::size_t> last(g.size());
  for (std::size_t x = 0; x < g.size(); ++x) {
    last[x] = x;
    for (NodeId u : users[x]) last[x] = std::max(last[x], static_cast<std::size_t>(u));
  }
  return last;
}

struct CoveringProblem {
  std::vector<double> cost, upper;
  std::vector<Row> rows;
  std::vector<int> recomputed_gap;  // per column: the gap a recomputation column restores, or -1
  std::vector<int> paged_gap;       // per column: the gap a page-in column restores, or -1
  std::vector<std::vector<std::size_t>> recomputed_inputs;  // per column: the inputs it has recomputed
  bool infeasible = false;
};

// The covering problem in units of the largest tensor and the compute-once objective.
// What the room checks found so far.
struct Rooms {
  // Per gap: the last stage whose row a recomputation restoring it relieves.
  std::vector<std::size_t> relieved_until;
  // Per gap and input recomputed for it: the first stage from which that input is held,
  // recomputed in an earlier stage (none: every row may come before its recomputation).
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> input_held_from;
};

CoveringProblem build(const Graph& g, const GraphCosts& costs, const SolveOptions& o, std::int64_t budget,
                      const Gaps& tensor_gaps, const Rooms& rooms) {
  const std::vector<std::size_t>& relieved_until = rooms.relieved_until;
  const std::vector<Gap>& gaps = tensor_gaps.gaps;
  const std::vector<std::vector<std::size_t>>& gaps_at = tensor_gaps.at;
  const std::size_t n = g.size();
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
  struct Held {
    std::size_t after;  // rows after this stage hold it (the tensor's last reader)
    double bytes;       // in units of the largest tensor
  };
  struct Recompute {
    int column;
    double frees;                   // before any of `held` counts, in units of the largest tensor
    std::vector<Held> held;         // inputs held for it, past their last reader
    std::size_t relieves_until;     // the last row it may relieve
    std::vector<int> needs;         // the restorations of its inputs it relies on
    double frees_at(std::size_t row) const {
      double f = frees;
      for (const Held& h : held)
        if (row > h.after) f -= h.bytes;
      return f;
    }
  };
  std::vector<std::vector<Recompute>> recompute(gaps.size());
  std::vector<int> pagein(gaps.size(), -1), pageout(n, -1), page_input(n, -1), recompute_input(n, -1);
  const auto add_column = [&](double cost) {
    p.cost.push_back(cost);
    p.upper.push_back(1);
    p.recomputed_gap.push_back(-1);
    p.paged_gap.push_back(-1);
    p.recomputed_inputs.emplace_back();
    return static_cast<int>(p.cost.size()) - 1;
  };
  const auto once = [&](int& column, double cost) {
    if (column < 0) column = add_column(cost);
    return column;
  };
  // The inputs a recomputation of `a` reads; past this many, one column that assumes them
  // resident (still valid, weaker).
  constexpr std::size_t kMaxInputs = 3;
  const auto inputs_of = [&](std::size_t a) {
    std::vector<std::size_t> out;
    for (NodeId id : g.node(static_cast<NodeId>(a)).inputs)
      if (std::find(out.begin(), out.end(), static_cast<std::size_t>(id)) == out.end())
        out.push_back(static_cast<std::size_t>(id));
    if (out.size() > kMaxInputs) out.clear();
    return out;
  };
  // Each tensor's last reader, and the bytes of its readers that a cover may recompute.
  // Kept past its last reader for several recomputations, a tensor is still one tensor:
  // each recomputation holds its share of the bytes, in proportion to its own.
  const std::vector<std::size_t> last_reader = last_readers(g);
  std::vector<char> has_gap(n, 0);
  for (const Gap& gap : gaps) has_gap[gap.tensor] = 1;
  std::vector<double> readers_bytes(n, 0);
  for (std::size_t a = 0; a < n; ++a)
    if (has_gap[a])
      for (std::size_t x : inputs_of(a)) readers_bytes[x] += mem(a);
  const auto share = [&](std::size_t a, std::size_t x) { return mem(a) / readers_bytes[x]; };
  const auto compute_cost = [&](std::size_t x) {
    const NodeCost& c = costs.nodes[x];
    return (energy ? c.compute_energy_j : c.compute_time_s) / scale;
  };
  const auto pagein_cost = [&](std::size_t x) { return (energy ? costs.nodes[x].pagein_energy_j : 0.0) / scale; };
  // The ways of having an input x at a's recomputation in stage s*:
  // - still there from its computation, for s* up to x's last reader b (`natural`: a then
  //   relieves rows before b only, and x's own gaps pay for any absence of x there);
  // - kept past b (its bytes in every row after b that the recomputation relieves);
  // - restored after b: paged in, or recomputed from its own private inputs (`nested`;
  //   else they are taken as resident), each kept, recomputed or paged in. x recomputed in
  //   stage s' with kept inputs Y: the rows before s' hold Y, those from s' on hold x, so
  //   each row after b holds min(mem(x), mem(Y)). A restoration of a tensor after its last
  //   reader is one column of its kind (recomputed, paged in), whichever recomputations
  //   rely on it: one event may serve them all.
  // Each way: the bytes it holds in the rows after b, and the restorations it needs.
  struct Way {
    double holds;
    std::vector<int> needs;
    bool natural = false;
    bool recomputed = false;
  };
  constexpr std::size_t kMaxWays = 64;  // per recomputation; past it, no nesting
  // `last_row`: the last row the recomputation may relieve; x there until then is all it needs.
  const auto ways_of = [&](std::size_t x, std::size_t a, std::size_t last_row, bool nested) {
    if (last_reader[x] > last_row) return std::vector<Way>{{0, {}, true}};
    std::vector<Way> ways{{mem(x), {}}};
    if (last_reader[x] > a) ways.push_back({0, {}, true});
    if (paging) ways.push_back({0, {once(page_input[x], pagein_cost(x))}});
    if (!remat) return ways;
    std::vector<std::size_t> inputs;
    if (nested)
      for (std::size_t y : inputs_of(x))
        if (last_reader[y] <= x) inputs.push_back(y);
    const std::size_t options = paging ? 3 : 2;  // per input: kept, recomputed, paged in
    std::size_t choices = 1;
    for (std::size_t j = 0; j < inputs.size(); ++j) choices *= options;
    for (std::size_t choice = 0; choice < choices; ++choice) {
      Way w{0, {once(recompute_input[x], compute_cost(x))}, false, true};
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
    const Gap& gap = gaps[k];
    const std::size_t a = gap.tensor;
    const std::vector<std::size_t> inputs = inputs_of(a);
    std::vector<std::vector<Way>> ways;
    std::size_t combinations = 1;
    for (std::size_t x : inputs) combinations *= ways_of(x, a, relieved_until[k], true).size();
    for (std::size_t x : inputs) ways.push_back(ways_of(x, a, relieved_until[k], combinations <= kMaxWays));
    // Every choice of one way per input (a mixed-radix count).
    std::vector<std::size_t> pick(inputs.size(), 0);
    for (bool more = true; more;) {
      Recompute r{-1, mem(a), {}, relieved_until[k], {}};
      std::vector<std::size_t> recomputed;
      for (std::size_t j = 0; j < inputs.size(); ++j) {
        const std::size_t x = inputs[j];
        const Way& w = ways[j][pick[j]];
        if (w.natural) r.relieves_until = std::min(r.relieves_until, last_reader[x] - 1);
        else if (w.holds > 0) r.held.push_back({last_reader[x], share(a, x) * w.holds});
        if (w.recomputed) {
          recomputed.push_back(x);
          // Recomputed in an earlier stage, x itself is held from then on.
          const auto held = rooms.input_held_from.find({k, x});
          if (held != rooms.input_held_from.end() && mem(x) > w.holds)
            r.held.push_back({std::max(last_reader[x], held->second - 1), share(a, x) * (mem(x) - w.holds)});
        }
        r.needs.insert(r.needs.end(), w.needs.begin(), w.needs.end());
      }
      // Else it relieves no row: never part of a cover.
      if (r.relieves_until > gap.previous_use && r.frees_at(gap.previous_use + 1) > 1e-12) {
        r.column = add_column(compute_cost(a));
        p.recomputed_gap.back() = static_cast<int>(k);
        p.recomputed_inputs.back() = std::move(recomputed);
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
  std::vector<char> recomputations_added(gaps.size(), 0);
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
      if (remat && t <= relieved_until[k] && !recomputations_added[k]) {
        add_recomputations(k);
        recomputations_added[k] = 1;
      }
      if (paging && pagein[k] < 0) {
        pagein[k] = add_column(energy ? c.pagein_energy_j / scale : 0);
        p.paged_gap.back() = static_cast<int>(k);
        once(pageout[a], energy ? c.pageout_energy_j / scale : 0);
      }
      for (const Recompute& r : recompute[k]) {
        const double frees = r.frees_at(t);
        if (t > r.relieves_until || frees <= 1e-12) continue;
        cover.columns.push_back(r.column);
        cover.values.push_back(frees);
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
  // Paged in after its last reader, a tensor was paged out: one page-out per tensor serves
  // every page-in of it.
  for (std::size_t x = 0; x < n; ++x)
    if (page_input[x] >= 0)
      p.rows.push_back({{page_input[x], once(pageout[x], energy ? costs.nodes[x].pageout_energy_j / scale : 0)},
                        {1, -1}, -INFINITY, 0});
  if (o.deadline_s) {
    // In units of the compute-once time; a hair of slack for the MILP's own tolerance.
    const double once = std::max(costs.total_compute_time_s, 1e-30);
    Row deadline{{}, {}, -INFINITY, (*o.deadline_s - costs.total_compute_time_s) / once + 1e-9};
    for (std::size_t k = 0; k < gaps.size(); ++k) {
      const NodeCost& c = costs.nodes[gaps[k].tensor];
      for (const Recompute& r : recompute[k]) deadline.columns.push_back(r.column), deadline.values.push_back(c.compute_time_s / once);
      if (strict && pagein[k] >= 0)
        deadline.columns.push_back(pagein[k]), deadline.values.push_back(pagein_step_time_s(c) / once);
    }
    for (std::size_t a = 0; a < n; ++a) {
      const NodeCost& c = costs.nodes[a];
      if (strict && pageout[a] >= 0)
        deadline.columns.push_back(pageout[a]), deadline.values.push_back(pageout_step_time_s(c) / once);
      if (strict && page_input[a] >= 0)
        deadline.columns.push_back(page_input[a]), deadline.values.push_back(pagein_step_time_s(c) / once);
      if (recompute_input[a] >= 0) deadline.columns.push_back(recompute_input[a]), deadline.values.push_back(c.compute_time_s / once);
    }
    if (deadline.upper < 0) p.infeasible = true;  // compute-once alone misses it
    p.rows.push_back(std::move(deadline));
  }
  return p;
}

// Ends CBC's search at its next event once the solve is asked to stop: its bound so far is
// as valid as at a limit.
class StopWhenRequested : public CbcEventHandler {
 public:
  explicit StopWhenRequested(const SolveOptions& o) : options_(&o) {}
  CbcEventHandler* clone() const override { return new StopWhenRequested(*this); }
  CbcAction event(CbcEvent) override { return options_->stop_requested() ? stop : noAction; }

 private:
  const SolveOptions* options_;
};

}  // namespace

std::optional<CoveringBound> covering_lower_bound(const Graph& g, const GraphCosts& costs, const SolveOptions& o,
                                                  std::int64_t activation_budget, long node_limit,
                                                  std::size_t max_room_checks, double seconds) {
  const double compute_once =
      o.objective == SolveObjective::Energy ? costs.total_compute_energy_j : costs.total_compute_time_s;
  const double scale = std::max(compute_once, 1e-30);
  const auto began = std::chrono::steady_clock::now();
  const auto seconds_left = [&] {
    if (o.stop_requested()) return 0.0;
    return seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  };
  const Gaps gaps = tensor_gaps(g);
  Rooms rooms;
  rooms.relieved_until.resize(gaps.gaps.size());
  for (std::size_t k = 0; k < gaps.gaps.size(); ++k) rooms.relieved_until[k] = gaps.gaps[k].next_use - 1;
  std::vector<char> checked(gaps.gaps.size(), 0);
  std::set<std::pair<std::size_t, std::size_t>> inputs_checked;
  std::size_t checks = 0;
  // The latest stage from `from` down to `above` + 1 with room to recompute `tensor` (and
  // `input_too` with it), or `above` when proven none has; a stage left unchecked (out of
  // checks or time) counts as having room.
  const auto latest_room = [&](std::size_t from, std::size_t above, std::size_t tensor,
                               std::optional<std::size_t> input_too) {
    std::size_t room = from;
    for (; room > above && checks < max_room_checks && seconds_left() > 0; --room, ++checks)
      if (stage_has_room_to_recompute(g, costs, room, tensor, input_too, activation_budget, kRoomNodeLimit)) break;
    return room;
  };
  const std::vector<std::size_t> last_reader = last_readers(g);

  std::optional<CoveringBound> out;
  for (std::size_t round = 0; round < kRounds; ++round) {
    const CoveringProblem p = build(g, costs, o, activation_budget, gaps, rooms);
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
    // Cuts and heuristics as CBC's own driver adds them (not the driver: it would take
    // SIGINT over in this process). They prove most covers at the root, where plain
    // branch-and-bound stopped at the node limit without one (resnet18_cifar m4 30%: bound
    // 0.590586 J unproven -> 0.590901 J proven; bert m4 30%: 512.364 -> 512.646 J).
    CbcModel cbc(solver);
    cbc.setLogLevel(0);
    cbc.messageHandler()->setLogLevel(0);
    CglProbing probing;
    probing.setUsingObjective(1);
    CglGomory gomory;
    CglKnapsackCover knapsack;
    CglClique clique;
    clique.setStarCliqueReport(false);  // else it prints to stdout
    clique.setRowCliqueReport(false);
    CglMixedIntegerRounding2 rounding_cuts;
    CglFlowCover flow;
    CglTwomir two_mir;
    for (CglCutGenerator* cuts : std::initializer_list<CglCutGenerator*>{&probing, &gomory, &knapsack, &clique,
                                                                         &rounding_cuts, &flow, &two_mir})
      cbc.addCutGenerator(cuts, -1);
    CbcRounding rounding(cbc);
    CbcHeuristicLocal local(cbc);
    CbcHeuristicFPump pump(cbc);
    CbcHeuristicGreedyCover greedy(cbc);
    for (CbcHeuristic* heuristic : std::initializer_list<CbcHeuristic*>{&rounding, &local, &pump, &greedy})
      cbc.addHeuristic(heuristic);
    cbc.setMaximumNodes(static_cast<int>(std::min<long>(node_limit, 1L << 30)));
    cbc.setMaximumSeconds(std::max(0.01, seconds_left()));
    StopWhenRequested stop_when_requested(o);
    cbc.passInEventHandler(&stop_when_requested);
    cbc.branchAndBound();
    // An infeasibility claimed at a limit is not a proof.
    if (cbc.isProvenInfeasible() && !cbc.isNodeLimitReached() && !cbc.isSecondsLimitReached()) return std::nullopt;
    bound.proven = cbc.isProvenOptimal();
    const double* solution = cbc.bestSolution();
    if (bound.proven && solution != nullptr) {
      // The optimum from the rounded solution, exact (CBC's bound carries its tolerances).
      double value = 0;
      for (int c = 0; c < bound.columns; ++c) value += p.cost[static_cast<std::size_t>(c)] * std::round(solution[c]);
      bound.bound = compute_once + scale * value;
    } else {
      // (An infinite bound, as CBC reports with nothing left open at a limit, proves nothing.)
      const double best_possible = cbc.getBestPossibleObjValue();
      bound.bound = compute_once + scale * (best_possible < 1e20 ? std::max(0.0, best_possible * (1 - 1e-6)) : 0.0);
    }
    if (solution != nullptr)
      for (int c = 0; c < bound.columns; ++c) {
        const auto column = static_cast<std::size_t>(c);
        const int gap = std::max(p.recomputed_gap[column], p.paged_gap[column]);
        if (gap >= 0 && std::round(solution[c]) >= 1) {
          const Gap& restored = gaps.gaps[static_cast<std::size_t>(gap)];
          bound.cover.push_back({restored.tensor, restored.next_use, p.paged_gap[column] >= 0});
        }
      }
    // Every round's problem is a relaxation of the MILP: keep the best bound of any.
    if (!out || bound.bound > out->bound) out = bound;
    if (solution == nullptr) break;

    // The recomputations the cover relies on, not yet checked: the latest stage of its gap
    // with room for one bounds the stages it relieves (the rows after it see the tensor).
    // An input it recomputes is recomputed in its stage (room for both) or in an earlier
    // one, with room for it alone, after which that input is held.
    bool restricted = false;
    for (int c = 0; c < bound.columns; ++c) {
      const int gap = p.recomputed_gap[static_cast<std::size_t>(c)];
      if (gap < 0 || std::round(solution[c]) < 1) continue;
      const auto k = static_cast<std::size_t>(gap);
      const Gap& x = gaps.gaps[k];
      if (!checked[k]) {
        checked[k] = 1;
        const std::size_t room = latest_room(x.next_use, x.previous_use, x.tensor, std::nullopt);
        if (room < x.next_use) {
          rooms.relieved_until[k] = room - 1;  // room == previous_use: no stage has room, nothing relieved
          restricted = true;
        }
      }
      for (std::size_t input : p.recomputed_inputs[static_cast<std::size_t>(c)]) {
        if (!inputs_checked.insert({k, input}).second) continue;
        const std::size_t both = latest_room(rooms.relieved_until[k] + 1, x.previous_use, x.tensor, input);
        const std::size_t alone = latest_room(x.next_use - 1, std::max(both, last_reader[input]), input, std::nullopt);
        // From this stage on the input is held, or (recomputed with x) x relieves nothing.
        const std::size_t held_from = std::max(both, alone);
        if (held_from >= x.next_use) continue;
        rooms.input_held_from[{k, input}] = held_from;
        restricted = true;
      }
    }
    if (!restricted) break;
  }
  return out;
}

}  // namespace poet::solve_internal
