#include "eviction_heuristic.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>

#include "poet/graph/op_table.h"

namespace poet::solve_internal {
namespace {

using Stage = std::size_t;

// A recomputation may instead keep resident its absent inputs of at most this share of the
// recomputed tensor's bytes (a ReLU mask is 1/32 of its tensor, a pooled gradient less).
// Both are candidates. Measured with --heuristic, m4: a one-block ResNet
// (tests/data/onnx/mini_resnet1.onnx, batch 8) at 50% 0.764 J with passes alone -> 0.688 J
// (HiGHS proves 0.648 J optimal), the transformer at 70% 41.25 -> 39.88 J; 16 other
// tight rows of the grids unchanged.
constexpr std::int64_t kSmallInputShare = 8;
// Greedy passes at most, each forbidding the recomputations that got the last one stuck.
// The one-block ResNet at 50%: the first pass gets stuck (before: no start but paging
// alone, 0.890 J), the second finds 0.688 J.
constexpr std::size_t kPasses = 8;
// A tensor may also be recomputed up to this many stages before the stage that reads it, in
// the last one where its inputs are there anyway, and kept until it is read: a ReLU mask
// recomputed where its ReLU's output is read for a weight gradient (mcu_cnn m4 90%: the
// optimum, 0.00520834 J, where recomputing the masks where they are read reran the first
// convolution, 0.00539758 J).
constexpr Stage kEarlyRecomputationStages = 8;

// Rounds of swapping recomputations for paging and back after a pass, at most.
constexpr std::size_t kSwapRounds = 4;
// Tensors tried kept from recomputation after the first schedule, the costliest first.
constexpr std::size_t kKeptTensorTries = 3;

// A dense [stage][node] 0/1 matrix: the search rewrites whole schedules many times, and
// graphs of a few hundred nodes make that a few hundred kilobytes.
class Grid {
 public:
  explicit Grid(std::size_t n) : n_(n), cells_(n * n, 0) {}
  char& at(Stage t, std::size_t i) { return cells_[t * n_ + i]; }
  char at(Stage t, std::size_t i) const { return cells_[t * n_ + i]; }
  void clear() { std::fill(cells_.begin(), cells_.end(), 0); }
  // Calls f(i) for each i < count set in row t, ascending. Rows are mostly zeros (a stage
  // computes its own node and a few recomputations), and memchr skips them many bytes at a
  // time: the search scans whole rows for every change it tries.
  template <typename F>
  void for_each_set(Stage t, std::size_t count, F f) const {
    const char* row = cells_.data() + t * n_;
    for (const char* p = row; (p = static_cast<const char*>(std::memchr(p, 1, count - static_cast<std::size_t>(p - row))));
         ++p)
      f(static_cast<std::size_t>(p - row));
  }

 private:
  std::size_t n_;
  std::vector<char> cells_;
};

struct Eviction {
  double score = std::numeric_limits<double>::infinity();
  double cost = 0;  // energy (J), or time (s) for the time objective
  std::size_t tensor = 0;
  Stage next_use = 0;
  bool page = false;
  std::vector<std::size_t> recomputed;  // for a recomputation: the tensor and the inputs it needs
  std::vector<std::size_t> paged_in;    // for a recomputation: inputs paged in for it instead
  double extra_time_s = 0;
};

class EvictionSearch {
 public:
  EvictionSearch(const Graph& g, const GraphCosts& costs, const SolveOptions& o, std::int64_t budget,
                 const EvictionChoices& choices, StopAt stop_at)
      : costs_(costs), o_(o), budget_(budget), guard_peaks_(choices.guard_peaks),
        deadline_after_memory_(choices.deadline_after_memory && o.deadline_s), first_(choices.first),
        stop_at_(stop_at),
        time_price_(o.deadline_s && o.objective == SolveObjective::Energy
                        ? costs.total_compute_energy_j / std::max(costs.total_compute_time_s, 1e-30)
                        : 0.0),
        n_(g.size()), computed_(n_), ram_(n_), aux_(n_), in_(n_), out_(n_), paged_(n_), events_(n_),
        stored_from_(n_), users_(n_), unique_inputs_(n_), in_place_(n_, n_), candidate_(n_, 0) {
    for (std::size_t k = 0; k < n_; ++k) {
      // As the MILP counts it: in strict accounting only.
      if (const auto over = in_place_input(g, static_cast<NodeId>(k)); over && o.accounting == Accounting::Strict)
        in_place_[k] = static_cast<std::size_t>(*over);
      std::set<std::size_t> inputs;
      for (NodeId i : g.node(static_cast<NodeId>(k)).inputs) inputs.insert(static_cast<std::size_t>(i));
      unique_inputs_[k].assign(inputs.begin(), inputs.end());
      for (std::size_t i : inputs) users_[i].push_back(k);
    }
  }

  // Greedy passes from checkpoint-all; then the same again with the costliest recomputed
  // tensor never evicted by recomputation, kept when that costs less (a few times). A greedy
  // pass can drop a convolution's output early because that was cheap then, and pay for
  // rerunning the convolution later where keeping it and recomputing the batch norm and
  // ReLU after it would have done.
  //
  // Likewise for the costliest paged tensor, kept resident instead: a pass can page a
  // tensor where a cheap recomputation it chose earlier fills a stage (a batch norm and
  // ReLU recomputed from a convolution's output kept for them), though evicting that
  // convolution's output instead, to recompute it later, would have let the tensor stay.
  std::optional<Schedule> run() {
    std::optional<std::pair<Schedule, double>> best = passes();
    for (std::set<std::size_t>* never : {&never_recomputed_, &never_paged_}) {
      std::set<std::size_t> tried;
      for (std::size_t k = 0; best && k < kKeptTensorTries && !stop_now(stop_at_, o_); ++k) {
        const std::optional<std::size_t> x = costliest_evicted(best->first, never == &never_paged_, tried);
        if (!x) break;
        tried.insert(*x);
        never->insert(*x);
        std::optional<std::pair<Schedule, double>> kept = passes();
        if (kept && kept->second < best->second * (1 - 1e-12))
          best = std::move(kept);
        else
          never->erase(*x);
      }
    }
    if (!best) return std::nullopt;
    return std::move(best->first);
  }

 private:
  // Greedy passes until one fits. A pass can get stuck: a stage over the budget with nothing
  // idle left to evict, because earlier recomputations into that stage hold their inputs
  // there. The next pass then never recomputes those tensors into that stage. The schedule
  // and its cost.
  std::optional<std::pair<Schedule, double>> passes() {
    forbidden_.clear();
    for (std::size_t pass = 0; pass < kPasses; ++pass) {
      const std::optional<Stage> stuck = greedy_pass();
      if (!stuck) return std::pair{schedule(), schedule_cost()};
      bool forbade = false;
      for (const Eviction& e : evictions_)
        if (!e.page && e.next_use == *stuck) forbade |= forbidden_.insert({e.tensor, e.next_use}).second;
      if (!forbade) return std::nullopt;
    }
    return std::nullopt;
  }

  // The tensor whose recomputations (or, `paged`, page-ins and page-outs) cost the most in
  // `s`, of those not in `tried`.
  std::optional<std::size_t> costliest_evicted(const Schedule& s, bool paged, const std::set<std::size_t>& tried) const {
    std::vector<double> spent(n_, 0);
    for (Stage t = 0; t < n_; ++t) {
      const auto add = [&](const SparseRow& row, double NodeCost::*energy, double NodeCost::*time) {
        for (NodeId i : row)
          if (static_cast<std::size_t>(i) != t) {
            const NodeCost& c = costs_.nodes[static_cast<std::size_t>(i)];
            spent[static_cast<std::size_t>(i)] += cost(c.*energy, c.*time);
          }
      };
      if (!paged) add(s.R.row(t), &NodeCost::compute_energy_j, &NodeCost::compute_time_s);
      if (paged) add(s.M_in.row(t), &NodeCost::pagein_energy_j, &NodeCost::pagein_time_s);
      if (paged) add(s.M_out.row(t), &NodeCost::pageout_energy_j, &NodeCost::pageout_time_s);
    }
    std::optional<std::size_t> out;
    for (std::size_t i = 0; i < n_; ++i)
      if (spent[i] > 0 && !tried.count(i) && (!out || spent[i] > spent[*out])) out = i;
    return out;
  }

  // One greedy pass; the stage it got stuck at, or none when every stage fits. Also fails
  // (returns the stage count) when the schedule misses the deadline.
  std::optional<Stage> greedy_pass() {
    computed_.clear();
    for (Stage t = 0; t < n_; ++t) computed_.at(t, t) = 1;
    for (auto& p : paged_) p.clear();
    evictions_.clear();
    for (const Restoration& r : first_) evict_first(r);
    const bool deadline = o_.deadline_s && !deadline_after_memory_;
    for (std::size_t step = 0; step < 4 * n_ + 16; ++step) {
      materialize();
      const std::vector<std::int64_t> peaks = stage_peaks();
      const auto over = std::find_if(peaks.begin(), peaks.end(), [&](std::int64_t p) { return p > budget_; });
      const double slack = deadline ? *o_.deadline_s - schedule_time() : std::numeric_limits<double>::infinity();
      if (slack < 0) return n_;
      if (over == peaks.end()) {
        undo_needless_evictions();
        if (deadline_after_memory_ && !trade_page_ins_for_time()) return n_;
        for (std::size_t round = 0; round < kSwapRounds; ++round)
          if (!page_instead_of_recomputing() && !recompute_instead_of_paging() && !keep_instead_of_paging()) break;
        return std::nullopt;
      }
      const Stage stage = static_cast<Stage>(over - peaks.begin());
      const auto best = cheapest_eviction(stage, peaks, slack);
      if (!best) return stage;
      apply(*best, true);
      evictions_.push_back(*best);
    }
    return n_;
  }

  // A restoration given to make first: an eviction of its tensor bridged to its use by a
  // page-in or a recomputation there (with the inputs that needs), where the mode and the
  // pass's exclusions allow it.
  void evict_first(const Restoration& r) {
    if (r.use >= n_ || r.tensor + 1 >= r.use) return;
    Eviction e{.tensor = r.tensor, .next_use = r.use, .page = r.paged, .recomputed = {}, .paged_in = {}};
    if (r.paged) {
      if (o_.mode == SolveMode::RematOnly || never_paged_.count(r.tensor)) return;
      std::tie(e.cost, e.extra_time_s) = transfer_cost(r.tensor, false);
    } else {
      if (o_.mode == SolveMode::PagingOnly || never_recomputed_.count(r.tensor) || forbidden_.count({r.tensor, r.use}))
        return;
      materialize();  // which inputs are resident there
      e.cost = add_recomputation(r.tensor, r.use, bytes(r.tensor) / kSmallInputShare, e);
    }
    apply(e, true);
    evictions_.push_back(std::move(e));
  }

  void apply(const Eviction& e, bool on) {
    // Several evictions may page one tensor in for the same stage: a multiset, one each.
    const auto page_in = [&](std::size_t i) {
      if (on)
        paged_[i].insert(e.next_use);
      else if (const auto it = paged_[i].find(e.next_use); it != paged_[i].end())
        paged_[i].erase(it);
    };
    if (e.page) {
      page_in(e.tensor);
    } else {
      for (std::size_t j : e.recomputed) computed_.at(e.next_use, j) = on;
      for (std::size_t j : e.paged_in) page_in(j);
    }
  }

  // An eviction chosen early, for the stage over the budget then, may be needless once
  // later ones freed that stage too: undo them, the costliest first, wherever every stage
  // stays within the budget (undoing never adds time). A tensor that another eviction's
  // recomputation reads stays resident instead (materialize() keeps what is not recomputed).
  void undo_needless_evictions() {
    std::vector<std::size_t> order(evictions_.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return evictions_[a].cost > evictions_[b].cost; });
    for (std::size_t k : order) {
      apply(evictions_[k], false);
      materialize();
      if (!every_stage_fits()) apply(evictions_[k], true);
    }
    materialize();
  }

  bool strict() const { return o_.accounting == Accounting::Strict; }
  double cost(double energy_j, double time_s) const {
    return o_.objective == SolveObjective::Energy ? energy_j : time_s;
  }
  std::int64_t bytes(std::size_t i) const { return costs_.nodes[i].bytes; }

  // The residency matrices that follow from what each stage computes and which gaps
  // between two uses of a tensor are bridged by paging (the others keep it in RAM).
  void materialize() {
    ram_.clear(), aux_.clear(), in_.clear(), out_.clear();
    for (auto& e : events_) e.clear();
    for (Stage t = 0; t < n_; ++t)
      computed_.for_each_set(t, t + 1, [&](std::size_t k) {
        events_[k].push_back(t);
        for (std::size_t i : unique_inputs_[k])
          if (!computed_.at(t, i)) events_[i].push_back(t);
      });
    for (std::size_t i = 0; i < n_; ++i) {
      auto& ev = events_[i];
      std::sort(ev.begin(), ev.end());
      ev.erase(std::unique(ev.begin(), ev.end()), ev.end());
      stored_from_[i].reset();
      for (std::size_t a = 0; a + 1 < ev.size(); ++a) {
        const Stage p = ev[a], q = ev[a + 1];
        if (computed_.at(q, i)) continue;  // recomputed there: nothing to carry
        // Page out from RAM: in the stage after it was computed, or in a stage that reads it.
        const Stage o = computed_.at(p, i) ? p + 1 : p;
        const bool page = paged_[i].count(q) && (stored_from_[i] ? *stored_from_[i] : o + 1) < q;
        if (!page) {  // kept (a recomputation elsewhere may have left a gap too short to page)
          for (Stage s = p + 1; s <= q; ++s) ram_.at(s, i) = 1;
          continue;
        }
        if (!stored_from_[i]) {
          ram_.at(o, i) = 1;
          out_.at(o, i) = 1;
          stored_from_[i] = o + 1;
        }
        // Strict accounting holds a page-in's buffer from the start of its stage, so the
        // stage that reads it may page it in; the paper's rows (reference) page in a stage
        // earlier and keep it resident.
        const Stage page_in = strict() ? q : q - 1;
        for (Stage s = *stored_from_[i]; s <= page_in; ++s) aux_.at(s, i) = 1;
        in_.at(page_in, i) = 1;
        if (!strict()) ram_.at(q, i) = 1;
      }
    }
  }

  // Whether the materialized schedule keeps every stage within the budget.
  bool every_stage_fits() const {
    for (Stage t = 0; t < n_; ++t)
      if (stage_peak(t) > budget_) return false;
    return true;
  }

  // The most activation memory each stage holds at once, as the MILP's U rows count it.
  std::vector<std::int64_t> stage_peaks() const {
    std::vector<std::int64_t> peaks(n_, 0);
    for (Stage t = 0; t < n_; ++t) peaks[t] = stage_peak(t);
    return peaks;
  }

  // Stage t's peak; with `recomputed` (a candidate eviction of recomputed[0] before t, which
  // t recomputes), as it would be after that eviction.
  std::int64_t stage_peak(Stage t, const std::vector<std::size_t>& recomputed = {}) const {
    // What stage t computes, ascending: its row and the candidate's recomputations.
    computes_.clear();
    computed_.for_each_set(t, t + 1, [&](std::size_t k) { computes_.push_back(k); });
    for (std::size_t k : recomputed) candidate_[k] = 1;
    if (!recomputed.empty()) {
      for (std::size_t k : recomputed)
        if (k <= t) computes_.push_back(k);
      std::sort(computes_.begin(), computes_.end());
      computes_.erase(std::unique(computes_.begin(), computes_.end()), computes_.end());
    }
    const auto computed = [&](std::size_t k) { return computed_.at(t, k) || candidate_[k]; };
    const std::size_t evicted = recomputed.empty() ? n_ : recomputed.front();  // n_: none
    std::int64_t u = 0;
    for (std::size_t i = 0; i < t; ++i) {
      const bool resident = ram_.at(t, i) && i != evicted;
      u += (resident + (strict() ? in_.at(t, i) : 0)) * bytes(i);
    }
    std::int64_t peak = u;
    for (std::size_t k : computes_) {
      std::int64_t released = 0, taken_in_place = 0;
      for (std::size_t in : unique_inputs_[k]) {  // an input read twice is freed once, as in the MILP
        // The MILP's FREE: released once k is done, unless a later node of the stage reads
        // it or the next stage keeps it; an input k is computed over in place, as k starts.
        const bool kept = t + 1 < n_ && ram_.at(t + 1, in);
        if (!kept && std::none_of(users_[in].begin(), users_[in].end(),
                                  [&](std::size_t j) { return j > k && j <= t && computed(j); }))
          (in == in_place_[k] ? taken_in_place : released) += bytes(in);
      }
      u += bytes(k) - taken_in_place;
      peak = std::max(peak, u);
      u -= released;
    }
    for (std::size_t k : recomputed) candidate_[k] = 0;
    return peak;
  }

  // What the schedule decided (which stages compute and which page in what), to try a
  // change and go back.
  struct Decisions {
    Grid computed;
    std::vector<std::multiset<Stage>> paged;
  };
  Decisions decisions() const { return {computed_, paged_}; }
  void restore(const Decisions& d) {
    computed_ = d.computed;
    paged_ = d.paged;
    materialize();
  }

  // The greedy pass decides one eviction at a time, so a tensor can end up recomputed for
  // several later recomputations (a convolution's output, once for its batch norm's and
  // once for its own gradient's), each cheaper than paging it alone, though one page-out
  // and two page-ins cost less than both. For each recomputed tensor, the most costly
  // first: page it in wherever it is recomputed instead, drop the recomputations that then
  // feed nothing, and keep the change where every stage still fits and it costs less.
  bool page_instead_of_recomputing() {
    if (o_.mode == SolveMode::RematOnly) return false;
    bool improved = false;
    std::vector<std::size_t> tensors;
    for (std::size_t x = 0; x < n_; ++x)
      if (bytes(x) > 0 && !recomputed_in(x).empty()) tensors.push_back(x);
    std::stable_sort(tensors.begin(), tensors.end(), [&](std::size_t a, std::size_t b) {
      return costs_.nodes[a].compute_energy_j > costs_.nodes[b].compute_energy_j;
    });
    double current = schedule_cost();
    for (std::size_t x : tensors) {
      const std::vector<Stage> stages = recomputed_in(x);
      if (stages.empty()) continue;
      const Decisions before = decisions();
      for (Stage q : stages) {
        computed_.at(q, x) = 0;
        paged_[x].insert(q);
      }
      drop_recomputations_feeding_nothing();
      improved |= keep_if_cheaper(before, current);
    }
    return improved;
  }

  // Until the schedule meets the deadline: replaces the page-in that adds the least cost per
  // second it saves, by keeping its tensor resident (which saves cost too) or recomputing it
  // there, where every stage still fits. Candidates are ranked by their own transfer and
  // recomputation, then tried in that order until one fits and saves time. Whether the
  // deadline holds at the end.
  bool trade_page_ins_for_time() {
    // A recomputation can page inputs in: a bound on the trades, as on the greedy's steps.
    // Keeping a tensor that did not fit once is not tried again (it would hold as much).
    std::set<std::pair<std::size_t, Stage>> unfit_keeps;
    struct Trade {
      double cost_per_s;
      std::size_t tensor;
      Stage use;
      bool keep;
    };
    for (std::size_t trades = 0; schedule_time() > *o_.deadline_s; ++trades) {
      if (trades == 4 * n_) return false;
      std::vector<Trade> candidates;
      for (std::size_t x = 0; x < n_; ++x)
        for (const Stage q : std::set<Stage>(paged_[x].begin(), paged_[x].end())) {
          const bool last = paged_[x].size() == 1;  // its page-out goes too
          const auto [paging_cost, paging_time] = transfer_cost(x, !last);
          if (paging_time <= 0) continue;
          if (!unfit_keeps.count({x, q})) candidates.push_back({-paging_cost / paging_time, x, q, true});
          if (o_.mode == SolveMode::PagingOnly) continue;
          Eviction e{.tensor = x, .next_use = q, .page = false, .recomputed = {}, .paged_in = {}};
          const double recompute_cost = add_recomputation(x, q, bytes(x) / kSmallInputShare, e);
          if (paging_time > e.extra_time_s)
            candidates.push_back({(recompute_cost - paging_cost) / (paging_time - e.extra_time_s), x, q, false});
        }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const Trade& a, const Trade& b) { return a.cost_per_s < b.cost_per_s; });
      const double time = schedule_time();
      bool traded = false;
      for (std::size_t k = 0; k < candidates.size() && !traded; ++k) {
        const Decisions before = decisions();
        replace_page_in(candidates[k].tensor, candidates[k].use, candidates[k].keep);
        materialize();
        traded = schedule_time() < time && every_stage_fits();
        if (!traded) {
          if (candidates[k].keep) unfit_keeps.insert({candidates[k].tensor, candidates[k].use});
          restore(before);
        }
      }
      if (!traded) return false;
    }
    return true;
  }

  // Drops x's page-in for stage q, and keeps x resident until q instead or recomputes it
  // there (materialize() then keeps in RAM what is neither paged nor recomputed).
  void replace_page_in(std::size_t x, Stage q, bool keep) {
    paged_[x].erase(paged_[x].find(q));
    if (!keep) recompute_for(x, q);
  }

  // Recomputes x in stage q, with the inputs that needs (as the schedule stands now).
  void recompute_for(std::size_t x, Stage q) {
    materialize();
    Eviction e{.tensor = x, .next_use = q, .page = false, .recomputed = {}, .paged_in = {}};
    add_recomputation(x, q, bytes(x) / kSmallInputShare, e);
    apply(e, true);
  }

  // The other way round: recompute a paged tensor where it is paged in, from inputs resident,
  // recomputed or paged in themselves (a ReLU from its convolution's output, paged anyway).
  bool recompute_instead_of_paging() {
    if (o_.mode == SolveMode::PagingOnly) return false;
    return try_replacing_each_page_in(false);
  }

  // A page-in the swaps made can bridge a gap that now fits in RAM (a tensor paged in for a
  // recomputation, then again for its next reader, where keeping it between them fits):
  // keep it resident instead where every stage still fits.
  bool keep_instead_of_paging() {
    return try_replacing_each_page_in(true);
  }

  // For each page-in in turn: replace it (replace_page_in) and keep the change where it
  // fits and costs less.
  bool try_replacing_each_page_in(bool keep) {
    bool improved = false;
    double current = schedule_cost();
    for (std::size_t x = 0; x < n_; ++x) {
      const std::vector<Stage> uses(paged_[x].begin(), paged_[x].end());
      for (Stage q : uses) {
        const Decisions before = decisions();
        replace_page_in(x, q, keep);
        improved |= keep_if_cheaper(before, current);
      }
    }
    return improved;
  }

  // Materializes the change just made, and keeps it where every stage fits, the deadline
  // holds and it costs less than `current`; else restores the schedule before it.
  bool keep_if_cheaper(const Decisions& before, double& current) {
    materialize();
    // The cost first: it is the cheaper test, and most changes tried fail it.
    const double cost = schedule_cost();
    if (cost < current * (1 - 1e-12) && (!o_.deadline_s || schedule_time() <= *o_.deadline_s) && every_stage_fits()) {
      current = cost;
      return true;
    }
    restore(before);
    return false;
  }

  // The stages other than its own that recompute x.
  std::vector<Stage> recomputed_in(std::size_t x) const {
    std::vector<Stage> out;
    for (Stage t = x + 1; t < n_; ++t)
      if (computed_.at(t, x)) out.push_back(t);
    return out;
  }

  // A recomputation feeds only later nodes of its stage: one sweep down from each stage's
  // own node finds every one left feeding nothing, however long the chain behind it.
  void drop_recomputations_feeding_nothing() {
    for (Stage t = 0; t < n_; ++t)
      for (std::size_t j = t; j-- > 0;)
        if (computed_.at(t, j) && std::none_of(users_[j].begin(), users_[j].end(), [&](std::size_t k) {
              return k <= t && computed_.at(t, k);
            }))
          computed_.at(t, j) = 0;
  }

  // Calls f(i) for each node i <= t that stage t computes, pages in or pages out, ascending.
  // The sums below skip only terms that are exactly 0, in the order of a full sweep.
  template <typename F>
  void for_each_active(Stage t, F f) const {
    active_.clear();
    const auto add = [&](std::size_t i) { active_.push_back(i); };
    computed_.for_each_set(t, t + 1, add);
    in_.for_each_set(t, t + 1, add);
    out_.for_each_set(t, t + 1, add);
    std::sort(active_.begin(), active_.end());
    active_.erase(std::unique(active_.begin(), active_.end()), active_.end());
    for (std::size_t i : active_) f(i);
  }

  // The objective of the materialized schedule: every computation and transfer.
  double schedule_cost() const {
    double total = 0;
    for (Stage t = 0; t < n_; ++t)
      for_each_active(t, [&](std::size_t i) {
        const NodeCost& c = costs_.nodes[i];
        total += computed_.at(t, i) * cost(c.compute_energy_j, c.compute_time_s);
        if (o_.objective == SolveObjective::Energy)
          total += in_.at(t, i) * c.pagein_energy_j + out_.at(t, i) * c.pageout_energy_j;
      });
    return total;
  }

  double schedule_time() const {
    double total = 0;
    for (Stage t = 0; t < n_; ++t)
      for_each_active(t, [&](std::size_t i) {
        const NodeCost& c = costs_.nodes[i];
        total += computed_.at(t, i) * c.compute_time_s;
        if (strict()) total += in_.at(t, i) * pagein_step_time_s(c) + out_.at(t, i) * pageout_step_time_s(c);
      });
    return total;
  }

  // Tensors `tensor` needs recomputed in stage q besides those resident or computed there.
  // An input of at most `keep_up_to` bytes is kept resident until q instead (materialize()
  // extends its lifetime to the stage that reads it): a gradient recomputed from a small
  // pooled gradient and a ReLU mask then costs one element-wise pass, where recomputing
  // its inputs would rerun the forward pass up to the loss. An input is paged in for q
  // instead where that costs less than recomputing it: a convolution's output already on
  // storage, from which its batch norm and ReLU are recomputed. With a deadline, the time
  // each takes counts too, at `time_price_`.
  double add_recomputation(std::size_t tensor, Stage q, std::int64_t keep_up_to, Eviction& e) const {
    if (std::find(e.recomputed.begin(), e.recomputed.end(), tensor) != e.recomputed.end()) return 0;
    e.recomputed.push_back(tensor);
    const NodeCost& c = costs_.nodes[tensor];
    e.extra_time_s += c.compute_time_s;
    double total = cost(c.compute_energy_j, c.compute_time_s);
    for (std::size_t x : unique_inputs_[tensor]) {
      if (computed_.at(q, x) || ram_.at(q, x) || bytes(x) <= keep_up_to) continue;
      if (std::find(e.paged_in.begin(), e.paged_in.end(), x) != e.paged_in.end()) continue;
      Eviction recomputing = e;
      const double recompute_cost = add_recomputation(x, q, keep_up_to, recomputing);
      const std::optional<std::pair<double, double>> paging = page_in_cost(x, q);
      const double recompute_time = recomputing.extra_time_s - e.extra_time_s;
      if (paging && paging->first + time_price_ * paging->second < recompute_cost + time_price_ * recompute_time) {
        e.paged_in.push_back(x);
        total += paging->first;
        e.extra_time_s += paging->second;
      } else {
        e = std::move(recomputing);
        total += recompute_cost;
      }
    }
    return total;
  }

  // What paging x in for stage q would cost (the objective's unit, and time), with its
  // page-out unless it is on storage by then; none without paging or room to page out.
  std::optional<std::pair<double, double>> page_in_cost(std::size_t x, Stage q) const {
    if (o_.mode == SolveMode::RematOnly || bytes(x) == 0) return std::nullopt;
    const bool stored = stored_from_[x] && *stored_from_[x] <= q;
    if (!stored && x + 2 > q) return std::nullopt;  // no stage between its computation and q to page out in
    return transfer_cost(x, stored);
  }

  // Paging x in, and out first unless it is `stored` already: the cost (the objective's
  // unit) and the time the deadline counts (strict accounting only).
  std::pair<double, double> transfer_cost(std::size_t x, bool stored) const {
    const NodeCost& c = costs_.nodes[x];
    const double energy = (stored ? 0 : c.pageout_energy_j) + c.pagein_energy_j;
    const double time = (stored ? 0 : pageout_step_time_s(c)) + pagein_step_time_s(c);
    return {cost(energy, time), strict() ? time : 0.0};
  }

  std::optional<Eviction> cheapest_eviction(Stage over, const std::vector<std::int64_t>& peaks, double slack) const {
    const bool remat = o_.mode != SolveMode::PagingOnly, paging = o_.mode != SolveMode::RematOnly;
    // Byte-stages over the budget that freeing `tensor` in stages [first, last] relieves.
    const auto relief = [&](std::size_t tensor, Stage first, Stage last) {
      double stages = 0;
      for (Stage s = first; s <= last; ++s) stages += peaks[s] > budget_ ? 1 : 0;
      return stages * static_cast<double>(std::max<std::int64_t>(bytes(tensor), 1));
    };
    std::optional<Eviction> best;
    const auto consider = [&](Eviction e) {
      if (e.extra_time_s <= slack && (!best || e.score < best->score)) best = std::move(e);
    };
    for (std::size_t i = 0; i < over; ++i) {
      if (!ram_.at(over, i) || bytes(i) == 0) continue;
      const auto& ev = events_[i];
      const auto next = std::upper_bound(ev.begin(), ev.end(), over);
      if (next == ev.end() || next == ev.begin() || *(next - 1) == over) continue;  // read in this stage
      const Stage p = *(next - 1), q = *next;
      if (paged_[i].count(q)) continue;  // already bridged by paging
      if (paging && !never_paged_.count(i)) {
        const bool stored = stored_from_[i] && *stored_from_[i] <= p + 1;
        const Stage first_free = stored ? p + 1 : computed_.at(p, i) ? p + 2 : p + 1;
        const Stage last_free = q - 1;
        if (q >= 2 && first_free <= over && over <= last_free) {
          const auto [transfer, time] = transfer_cost(i, stored);
          consider({.score = transfer / relief(i, first_free, last_free), .cost = transfer, .tensor = i,
                    .next_use = q, .page = true, .recomputed = {}, .paged_in = {}, .extra_time_s = time});
        }
      }
      if (remat && !forbidden_.count({i, q}) && !never_recomputed_.count(i))
        for (const std::int64_t keep_up_to : {std::int64_t{0}, bytes(i) / kSmallInputShare}) {
          Eviction e{.tensor = i, .next_use = q, .page = false, .recomputed = {}, .paged_in = {}};
          e.cost = add_recomputation(i, q, keep_up_to, e);
          e.score = e.cost / relief(i, p + 1, q - 1);
          // A recomputation holds its inputs in stage q: one that would push q over the budget
          // (or further over) trades one over-budget stage for another, and piles up.
          if (!guard_peaks_ || stage_peak(q, e.recomputed) <= std::max(budget_, peaks[q])) consider(std::move(e));
        }
      // Or recompute it shortly before q, in the last stage where its inputs are there anyway,
      // and keep it until q.
      if (remat && !never_recomputed_.count(i))
        for (Stage r = q - 1; r > over && r + kEarlyRecomputationStages >= q; --r) {
          if (forbidden_.count({i, r}) ||
              !std::all_of(unique_inputs_[i].begin(), unique_inputs_[i].end(),
                           [&](std::size_t x) { return computed_.at(r, x) || ram_.at(r, x); }))
            continue;
          const NodeCost& c = costs_.nodes[i];
          Eviction e{.cost = cost(c.compute_energy_j, c.compute_time_s), .tensor = i, .next_use = r, .page = false,
                     .recomputed = {i}, .paged_in = {}, .extra_time_s = c.compute_time_s};
          e.score = e.cost / relief(i, p + 1, r - 1);
          if (!guard_peaks_ || stage_peak(r, e.recomputed) <= std::max(budget_, peaks[r])) consider(std::move(e));
          break;
        }
    }
    return best;
  }

  Schedule schedule() const {
    Schedule s(n_, "eviction");
    const auto copy = [&](const Grid& grid, SparseMatrix& matrix) {
      for (Stage t = 0; t < n_; ++t) grid.for_each_set(t, t + 1, [&](std::size_t i) { matrix.set(t, static_cast<NodeId>(i)); });
    };
    copy(computed_, s.R);
    copy(ram_, s.S_ram);
    copy(aux_, s.S_aux);
    copy(in_, s.M_in);
    copy(out_, s.M_out);
    return s;
  }

  const GraphCosts& costs_;
  const SolveOptions& o_;
  std::int64_t budget_;
  bool guard_peaks_;
  bool deadline_after_memory_;
  const std::vector<Restoration>& first_;
  StopAt stop_at_;
  // With a deadline (energy objective): what a second weighs when an input is paged in or
  // recomputed for a recomputation, the energy of a second of computing. On a72 a page-in
  // costs next to no energy but seconds of the deadline, which the choice by energy alone
  // spent (resnet18_cifar a72 30% 1.2x, --heuristic: 12.6% -> 0.30% above the bound).
  double time_price_;
  std::size_t n_;
  Grid computed_, ram_, aux_, in_, out_;
  std::vector<std::multiset<Stage>> paged_;  // per tensor: the uses reached by a page-in
  std::vector<std::vector<Stage>> events_;  // per tensor: stages that compute or read it, ascending
  std::vector<std::optional<Stage>> stored_from_;
  std::vector<std::vector<std::size_t>> users_, unique_inputs_;
  std::vector<std::size_t> in_place_;  // per node, the input it may be computed over in place (n_: none)
  // stage_peak()'s scratch, kept to spare an allocation per call.
  mutable std::vector<std::size_t> computes_, active_;  // and for_each_active()'s
  mutable std::vector<char> candidate_;  // per node: in the candidate eviction's recomputations
  std::vector<Eviction> evictions_;  // applied, in order
  std::set<std::pair<std::size_t, Stage>> forbidden_;  // recomputations (tensor, stage) a stuck pass made
  std::set<std::size_t> never_recomputed_;  // tensors no eviction may drop for a recomputation
  std::set<std::size_t> never_paged_;       // tensors no eviction may page
};

}  // namespace

std::optional<Schedule> eviction_schedule(const Graph& g, const GraphCosts& costs, const SolveOptions& options,
                                          std::int64_t activation_budget, const EvictionChoices& choices,
                                          StopAt stop_at) {
  return EvictionSearch(g, costs, options, activation_budget, choices, stop_at).run();
}

}  // namespace poet::solve_internal
