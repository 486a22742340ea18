#include "poet/baselines/dtr.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "poet/baselines/forward_part.h"
#include "poet/graph/op_table.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

class DtrRuntime {
 public:
  DtrRuntime(const Graph& g, const GraphCosts& costs, std::int64_t budget)
      : g_(g), costs_(costs), budget_(budget), users_(g.users()), resident_(g.size(), false),
        computed_(g.size(), false), last_access_(g.size(), 0), reads_left_in_stage_(g.size(), 0),
        schedule_(g.size(), "dtr") {
    // The last stage whose own compute reads each tensor: after it the tensor is dead for
    // the program, and DTR frees it (recomputation may still bring it back).
    last_program_use_.assign(g.size(), 0);
    for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) {
      last_program_use_[v] = static_cast<std::size_t>(v);
      for (NodeId u : users_[v]) last_program_use_[v] = std::max(last_program_use_[v], static_cast<std::size_t>(u));
    }
  }

  std::variant<DtrRun, std::string> run() {
    for (std::size_t t = 0; t < g_.size(); ++t)
      if (auto stuck = run_stage(t)) return *stuck;
    fill_ram_by_liveness(schedule_, g_);
    return DtrRun{std::move(schedule_), std::move(evictions_)};
  }

 private:
  // The nodes stage t computes: t and, recursively, every evicted input on the way.
  std::vector<NodeId> stage_computes(NodeId t) const {
    std::vector<NodeId> out{t}, stack{t};
    std::vector<bool> seen(g_.size(), false);
    seen[t] = true;
    while (!stack.empty()) {
      const NodeId v = stack.back();
      stack.pop_back();
      for (NodeId in : g_.node(v).inputs)
        if (!resident_[in] && !seen[in]) {
          seen[in] = true;
          out.push_back(in);
          stack.push_back(in);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::optional<std::string> run_stage(std::size_t t) {
    const auto computes = stage_computes(static_cast<NodeId>(t));
    for (NodeId k : computes)
      for (NodeId in : g_.node(k).inputs) ++reads_left_in_stage_[in];
    for (NodeId k : computes) {
      while (used_ + bytes(k) - bytes_taken_in_place(t, k) > budget_) {
        const NodeId victim = cheapest_to_evict();
        if (victim < 0)
          return fmt::format("stage {} ('{}') cannot compute '{}' ({}): {} of tensors its stage still reads "
                             "are resident, {} more would exceed the activation budget {}, and nothing else is "
                             "left to evict",
                             t, g_.node(static_cast<NodeId>(t)).name, g_.node(k).name, k,
                             format_bytes_exact(used_), format_bytes_exact(bytes(k)), format_bytes_exact(budget_));
        release(victim);
        evictions_.push_back({t, victim});
      }
      compute(t, k);
    }
    return std::nullopt;
  }

  void compute(std::size_t t, NodeId k) {
    schedule_.R.set(t, k);
    ++clock_;
    resident_[k] = computed_[k] = true;
    used_ += bytes(k);
    last_access_[k] = clock_;
    for (NodeId in : g_.node(k).inputs) {
      last_access_[in] = clock_;
      --reads_left_in_stage_[in];
    }
    // Dead tensors go as soon as this stage no longer reads them.
    const auto free_if_dead = [&](NodeId v) {
      if (resident_[v] && reads_left_in_stage_[v] == 0 && last_program_use_[v] <= t) release(v);
    };
    for (NodeId in : g_.node(k).inputs) free_if_dead(in);
    free_if_dead(k);
  }

  // The bytes k takes from its input when computed in place (op_table.h's in_place_input):
  // the input's, when k is the last read of it the program makes (it is freed right after).
  std::int64_t bytes_taken_in_place(std::size_t t, NodeId k) const {
    const std::optional<NodeId> over = in_place_input(g_, k);
    if (!over || !resident_[*over] || reads_left_in_stage_[*over] != 1 || last_program_use_[*over] > t) return 0;
    return bytes(*over);
  }

  void release(NodeId v) {
    resident_[v] = false;
    used_ -= bytes(v);
  }

  std::int64_t bytes(NodeId v) const { return costs_.nodes[v].bytes; }

  // Compute time of v and of its evicted neighbourhood (see dtr.h).
  double neighbourhood_cost(NodeId v) const {
    double cost = costs_.nodes[v].compute_time_s;
    std::vector<bool> seen(g_.size(), false);
    std::vector<NodeId> stack;
    const auto visit = [&](NodeId w) {
      if (!seen[w] && computed_[w] && !resident_[w]) {
        seen[w] = true;
        cost += costs_.nodes[w].compute_time_s;
        stack.push_back(w);
      }
    };
    for (NodeId in : g_.node(v).inputs) visit(in);
    while (!stack.empty()) {  // ancestors
      const NodeId w = stack.back();
      stack.pop_back();
      for (NodeId in : g_.node(w).inputs) visit(in);
    }
    for (NodeId u : users_[v]) visit(u);
    while (!stack.empty()) {  // descendants
      const NodeId w = stack.back();
      stack.pop_back();
      for (NodeId u : users_[w]) visit(u);
    }
    return cost;
  }

  // -1 when nothing can be evicted: everything resident is read by this stage or a source.
  NodeId cheapest_to_evict() const {
    NodeId best = -1;
    double best_h = std::numeric_limits<double>::infinity();
    const std::uint64_t now = clock_ + 1;  // the compute waiting for room
    for (NodeId v = 0; v < static_cast<NodeId>(g_.size()); ++v) {
      if (!resident_[v] || reads_left_in_stage_[v] > 0 || g_.node(v).inputs.empty() || bytes(v) == 0) continue;
      const double staleness = static_cast<double>(now - last_access_[v]);
      const double h = neighbourhood_cost(v) / (static_cast<double>(bytes(v)) * staleness);
      if (best < 0 || h < best_h || (h == best_h && bytes(v) > bytes(best))) best = v, best_h = h;
    }
    return best;
  }

  const Graph& g_;
  const GraphCosts& costs_;
  const std::int64_t budget_;
  const std::vector<std::vector<NodeId>> users_;
  std::vector<std::size_t> last_program_use_;
  std::vector<bool> resident_, computed_;
  std::vector<std::uint64_t> last_access_;  // the clock of the last compute that read or wrote it
  std::vector<int> reads_left_in_stage_;
  std::uint64_t clock_ = 0;  // computes so far
  std::int64_t used_ = 0;
  Schedule schedule_;
  std::vector<DtrEviction> evictions_;
};

}  // namespace

std::variant<DtrRun, std::string> run_dtr(const Graph& g, const GraphCosts& costs, std::int64_t activation_budget) {
  POET_CHECK(costs.nodes.size() == g.size(), "costs belong to another graph");
  return DtrRuntime(g, costs, activation_budget).run();
}

BaselineResult dtr_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options) {
  if (auto too_small = below_smallest_working_set(g, options)) return no_schedule(*too_small);
  const std::int64_t activation_budget = options.ram_budget_bytes
                                             ? *options.ram_budget_bytes - counted_fixed_bytes(g, options)
                                             : std::numeric_limits<std::int64_t>::max();
  auto run = run_dtr(g, costs, activation_budget);
  if (auto* stuck = std::get_if<std::string>(&run)) return no_schedule(*stuck);
  auto& done = std::get<DtrRun>(run);
  BaselineResult r;
  r.simulation = simulate_baseline(g, costs, done.schedule, options);
  // The plan frees each copy at its last read, never later than DTR's own bookkeeping, so
  // exceeding the budget here would be a bug in the bookkeeping.
  POET_CHECK(fits_budget(*r.simulation, options),
             fmt::format("dtr's schedule peaks at {} over the budget {}", r.simulation->peak_bytes,
                         *options.ram_budget_bytes));
  r.choice = fmt::format("{} evictions", done.evictions.size());
  r.schedule = std::move(done.schedule);
  return r;
}

}  // namespace poet
