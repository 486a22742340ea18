#include "poet/baselines/capuchin.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "poet/plan/plan.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

enum class Eviction { Paged, Recomputed };

// Each tensor's touches (stages in which it must be in RAM: its production, every read)
// and which gaps between consecutive touches are evicted, keyed by the gap's first touch.
struct Residency {
  std::vector<std::vector<std::size_t>> touches;
  std::vector<std::map<std::size_t, Eviction>> evicted;
  std::set<std::pair<std::size_t, NodeId>> extra_computes;  // (stage, node): ancestors a recomputation needs
};

struct Gap {
  NodeId node;
  std::size_t from, to;  // consecutive touches
};

Residency checkpoint_all_residency(const Graph& g) {
  Residency r;
  r.touches.resize(g.size());
  r.evicted.resize(g.size());
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
    r.touches[v].push_back(static_cast<std::size_t>(v));
    for (NodeId in : g.node(v).inputs) r.touches[in].push_back(static_cast<std::size_t>(v));
  }
  for (auto& t : r.touches) {
    std::sort(t.begin(), t.end());
    t.erase(std::unique(t.begin(), t.end()), t.end());
  }
  return r;
}

// Whether j is in RAM during stage t without help: t is a touch, or lies inside a gap kept in RAM.
bool present_at(const Residency& r, NodeId j, std::size_t t) {
  const auto& touches = r.touches[j];
  const auto it = std::lower_bound(touches.begin(), touches.end(), t);
  if (it != touches.end() && *it == t) return true;
  if (it == touches.begin() || it == touches.end()) return false;
  return !r.evicted[j].contains(*std::prev(it));
}

// What recomputing v in stage t also recomputes there: its inputs not in RAM then,
// recursively (a source is read again, as the simulator allows). Nothing when one of them
// is being paged in during that very stage: its page-in and a compute would clash.
std::optional<std::vector<NodeId>> recompute_closure(const Residency& r, const Graph& g, NodeId v, std::size_t t) {
  std::vector<NodeId> closure, stack{v};
  std::set<NodeId> seen{v};
  while (!stack.empty()) {
    const NodeId w = stack.back();
    stack.pop_back();
    for (NodeId in : g.node(w).inputs) {
      if (present_at(r, in, t) || !seen.insert(in).second) continue;
      const auto& touches = r.touches[in];
      const auto next = std::upper_bound(touches.begin(), touches.end(), t);
      if (next != touches.end()) {
        const auto kind = r.evicted[in].find(*std::prev(next));
        if (kind != r.evicted[in].end() && kind->second == Eviction::Paged && *next == t + 1) return std::nullopt;
      }
      closure.push_back(in);
      stack.push_back(in);
    }
  }
  return closure;
}

// Calls gap(a, b, how) for each two consecutive touches a < b of v, `how` the eviction
// between them (none: kept resident). Returns the first stage that pages v out, or n.
template <typename F>
std::size_t for_each_gap(const Residency& r, NodeId v, std::size_t n, F gap) {
  const auto& touches = r.touches[v];
  std::size_t first_pageout = n;
  for (std::size_t k = 0; k + 1 < touches.size(); ++k) {
    const std::size_t a = touches[k], b = touches[k + 1];
    const auto kind = r.evicted[v].find(a);
    const std::optional<Eviction> how =
        kind == r.evicted[v].end() ? std::nullopt : std::optional<Eviction>(kind->second);
    if (how == Eviction::Paged) first_pageout = std::min(first_pageout, a);
    gap(a, b, how);
  }
  return first_pageout;
}

// For each stage, a bit per node: flipped where the node's range of stages starts and
// after it ends. Swept over the stages, the flips give the set of nodes inside a range.
class StageFlips {
 public:
  StageFlips(std::size_t stages, std::size_t nodes) : words_((nodes + 63) / 64), bits_((stages + 1) * words_, 0) {}
  // Node v in the stages [from, to].
  void add_range(NodeId v, std::size_t from, std::size_t to) {
    flip(from, v);
    flip(to + 1, v);
  }
  // Appends to each row t of `m` the nodes in a range across t, ascending.
  void sweep_into(SparseMatrix& m) const {
    std::vector<std::uint64_t> inside(words_, 0);
    for (std::size_t t = 0; t < m.stages(); ++t)
      for (std::size_t w = 0; w < words_; ++w)
        for (std::uint64_t word = inside[w] ^= bits_[t * words_ + w]; word != 0; word &= word - 1)
          m.set(t, static_cast<NodeId>(w * 64 + static_cast<std::size_t>(std::countr_zero(word))));
  }

 private:
  void flip(std::size_t t, NodeId v) {
    bits_[t * words_ + static_cast<std::size_t>(v) / 64] ^= std::uint64_t{1} << (static_cast<std::size_t>(v) % 64);
  }
  std::size_t words_;
  std::vector<std::uint64_t> bits_;
};

// Into `s`, whose rows keep their storage: Capuchin lays out thousands of candidates.
// S_ram and S_aux hold most entries. A tensor's stages in RAM (or on storage) are disjoint
// ranges, so the rows are swept out whole, each written in order. Set entry by entry,
// tensor by tensor, into rows allocated afresh, they took half of Capuchin's time on
// resnet50 (SparseMatrix::set a third, malloc and free most of the rest).
void lay_out(const Graph& g, const Residency& r, Schedule& s) {
  const std::size_t n = g.size();
  if (s.stages != n) s = Schedule(n, "capuchin");
  for (SparseMatrix* m : {&s.R, &s.S_ram, &s.S_aux, &s.M_in, &s.M_out}) m->clear();
  StageFlips in_ram(n, n), on_aux(n, n);
  for (std::size_t t = 0; t < n; ++t) s.R.set(t, static_cast<NodeId>(t));
  for (const auto& [t, v] : r.extra_computes) s.R.set(t, v);
  for (NodeId v = 0; v < static_cast<NodeId>(n); ++v) {
    const std::size_t first_pageout = for_each_gap(r, v, n, [&](std::size_t a, std::size_t b, std::optional<Eviction> how) {
      if (!how) {
        in_ram.add_range(v, a + 1, b);
      } else if (how == Eviction::Paged) {
        s.M_out.set(a, v);
        s.M_in.set(b - 1, v);
        in_ram.add_range(v, b, b);
      } else {
        s.R.set(b, v);
      }
    });
    if (first_pageout + 1 < n) on_aux.add_range(v, first_pageout + 1, n - 1);
  }
  in_ram.sweep_into(s.S_ram);
  on_aux.sweep_into(s.S_aux);
}

// The stage each plan instruction belongs to (a free: that of the work before it).
std::vector<std::size_t> instruction_stages(const Schedule& s, const Plan& plan) {
  std::vector<std::size_t> stages;
  stages.reserve(plan.instructions.size());
  std::size_t t = 0, left = s.M_in.row(0).size() + s.R.row(0).size() + s.M_out.row(0).size();
  for (const Instruction& ins : plan.instructions) {
    if (ins.kind != InstrKind::Free) {
      while (left == 0) {
        ++t;
        left = s.M_in.row(t).size() + s.R.row(t).size() + s.M_out.row(t).size();
      }
      --left;
    }
    stages.push_back(t);
  }
  return stages;
}

class Capuchin {
 public:
  Capuchin(const Graph& g, const GraphCosts& costs, const SimulationOptions& options,
           const std::function<bool()>& give_up)
      : g_(g), costs_(costs), options_(options), give_up_(give_up), residency_(checkpoint_all_residency(g)) {}

  BaselineResult run() {
    Attempt current;
    evaluate(residency_, current);
    while (current.excess > 0) {
      const std::size_t peak_stage = current.stages[current.sim.peak_instruction];
      const bool improved =
          improve_at(peak_stage, current, Eviction::Paged) || improve_at(peak_stage, current, Eviction::Recomputed);
      if (gave_up_) return no_schedule("capuchin: given up before its schedule fit the budget");
      if (!improved)
        return no_schedule(fmt::format(
            "capuchin: after paging {} and recomputing {} tensor gaps the schedule still peaks at {} in stage {} "
            "('{}'), above the budget {}, and no tensor idle there can be paged or recomputed to lower it",
            paged_, recomputed_, format_bytes_exact(current.sim.peak_bytes), peak_stage,
            g_.node(static_cast<NodeId>(peak_stage)).name, format_bytes_exact(*options_.ram_budget_bytes)));
    }
    BaselineResult r;
    r.choice = fmt::format("{} paged, {} recomputed", counted(static_cast<std::size_t>(paged_), "gap"), recomputed_);
    r.simulation = std::move(current.sim);
    r.schedule = std::move(current.schedule);
    return r;
  }

 private:
  struct Attempt {
    Schedule schedule;
    SimulationResult sim;
    std::vector<std::size_t> stages;
    std::int64_t excess = 0;  // summed over the timeline's points
  };

  // Into `a`, reusing its schedule's rows.
  void evaluate(const Residency& r, Attempt& a) const {
    lay_out(g_, r, a.schedule);
    a.excess = 0;
    const Plan plan = plan_from_schedule(a.schedule, g_);
    // Capuchin swaps only where compute hides the transfer: judged without the budget, a
    // page-out keeps its RAM until its transfer ends, where under the budget a compute
    // would wait for it (simulator.h). A swap that needs such a wait is recomputed instead.
    SimulationOptions unbudgeted = options_;
    unbudgeted.ram_budget_bytes.reset();
    a.sim = simulate_baseline(g_, costs_, a.schedule, plan, unbudgeted);
    a.stages = instruction_stages(a.schedule, plan);
    if (options_.ram_budget_bytes)
      for (const MemoryPoint& p : a.sim.timeline)
        a.excess += std::max<std::int64_t>(0, p.bytes + a.sim.fixed_bytes - *options_.ram_budget_bytes);
  }

  // Gaps of resident, idle tensors across `stage` that `kind` can evict, best first.
  std::vector<Gap> candidates(std::size_t stage, Eviction kind) const {
    std::vector<std::pair<double, Gap>> scored;
    for (NodeId v = 0; v < static_cast<NodeId>(g_.size()); ++v) {
      if (costs_.nodes[v].bytes == 0) continue;
      const auto& touches = residency_.touches[v];
      const auto it = std::upper_bound(touches.begin(), touches.end(), stage);
      if (it == touches.begin() || it == touches.end()) continue;
      const Gap gap{v, *std::prev(it), *it};
      if (gap.from == stage) continue;  // read there: not idle
      // A paged gap may still turn into a recomputation: its page-out can be too slow to
      // free the buffer in time, where dropping it frees it at once.
      const auto evicted = residency_.evicted[v].find(gap.from);
      if (evicted != residency_.evicted[v].end() && (kind == Eviction::Paged || evicted->second == kind)) continue;
      if (kind == Eviction::Paged) {
        // Out during the gap's stages but the one the page-in runs in.
        if (stage + 1 >= gap.to) continue;
        double window = 0;
        for (std::size_t t = gap.from + 1; t < gap.to; ++t) window += costs_.nodes[t].compute_time_s;
        const double transfer = costs_.nodes[v].pageout_time_s + costs_.nodes[v].pagein_time_s;
        scored.push_back({transfer > 0 ? window / transfer : std::numeric_limits<double>::infinity(), gap});
      } else {
        if (g_.node(v).inputs.empty()) continue;  // a source cannot be recomputed
        const auto closure = recompute_closure(residency_, g_, v, gap.to);
        if (!closure) continue;
        double time = costs_.nodes[v].compute_time_s;
        for (NodeId w : *closure) time += costs_.nodes[w].compute_time_s;
        const double bytes = static_cast<double>(costs_.nodes[v].bytes);
        scored.push_back({time > 0 ? bytes / time : std::numeric_limits<double>::infinity(), gap});
      }
    }
    std::stable_sort(scored.begin(), scored.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first > b.first;
      return costs_.nodes[a.second.node].bytes > costs_.nodes[b.second.node].bytes;
    });
    std::vector<Gap> out;
    for (const auto& [score, gap] : scored) out.push_back(gap);
    return out;
  }

  static Residency with(const Residency& r, const Graph& g, const Gap& gap, Eviction kind) {
    Residency next = r;
    next.evicted[gap.node][gap.from] = kind;
    if (kind == Eviction::Paged) return next;
    const auto closure = recompute_closure(r, g, gap.node, gap.to);
    POET_CHECK(closure.has_value(), "capuchin: a recomputation candidate lost its inputs");
    std::vector<NodeId> computed = *closure;
    for (NodeId w : *closure) next.extra_computes.insert({gap.to, w});
    computed.push_back(gap.node);
    for (NodeId w : computed)
      for (NodeId in : g.node(w).inputs) {
        if (!present_at(r, in, gap.to)) continue;  // recomputed there too
        auto& touches = next.touches[in];
        const auto it = std::lower_bound(touches.begin(), touches.end(), gap.to);
        if (it == touches.end() || *it != gap.to) touches.insert(it, gap.to);  // splits a gap kept in RAM
      }
    return next;
  }

  bool improve_at(std::size_t stage, Attempt& current, Eviction kind) {
    for (const Gap& gap : candidates(stage, kind)) {
      if (give_up_ && give_up_()) {  // between simulations, the unit of its work
        gave_up_ = true;
        return false;
      }
      Residency next = with(residency_, g_, gap, kind);
      evaluate(next, attempt_);
      if (attempt_.excess >= current.excess) continue;
      if (residency_.evicted[gap.node].contains(gap.from)) --paged_;  // a paged gap turned recomputed
      residency_ = std::move(next);
      std::swap(current, attempt_);
      ++(kind == Eviction::Paged ? paged_ : recomputed_);
      return true;
    }
    return false;
  }

  const Graph& g_;
  const GraphCosts& costs_;
  const SimulationOptions& options_;
  const std::function<bool()>& give_up_;
  bool gave_up_ = false;
  Residency residency_;
  Attempt attempt_;  // the candidate under evaluation; its rows are reused by the next
  int paged_ = 0, recomputed_ = 0;
};

}  // namespace

BaselineResult capuchin_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options,
                                   const std::function<bool()>& give_up) {
  POET_CHECK(costs.nodes.size() == g.size(), "costs belong to another graph");
  if (auto too_small = below_smallest_working_set(g, options)) return no_schedule("capuchin: " + *too_small);
  return Capuchin(g, costs, options, give_up).run();
}

BaselineResult capuchin_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options) {
  return capuchin_for_budget(g, costs, options, {});
}

}  // namespace poet
