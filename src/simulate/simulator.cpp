#include "poet/simulate/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <queue>

#include "poet/graph/op_table.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

constexpr std::size_t kNever = static_cast<std::size_t>(-1);

struct TensorState {
  bool in_ram = false;
  bool on_storage = false;
  bool computed = false;
  double ready_s = 0;           // when the RAM copy is complete
  double storage_ready_s = 0;   // when the copy on storage is complete
  double pageout_end_s = -1;    // end of a page-out of the current RAM copy, if any
  std::size_t freed_by = kNever;
  std::size_t paged_out_by = kNever;
  std::size_t buffer = kNever;  // the current RAM copy
  bool handed_over = false;     // its bytes went to a compute in place; its free releases nothing
};

struct MemoryEvent {
  double time_s;
  std::int64_t delta;
  std::size_t instruction;
  std::size_t buffer;  // index into SimulationResult::buffers
  bool release;
};

class Simulation {
 public:
  Simulation(const Graph& g, const GraphCosts& costs, const Plan& plan)
      : g_(g), costs_(costs), plan_(plan), state_(g.size()) {}

  SimulationResult run(const SimulationOptions& options) {
    POET_CHECK(costs_.nodes.size() == g_.size(), "costs belong to another graph");
    result_.fixed_bytes = counted_fixed_bytes(g_, options);
    if (options.ram_budget_bytes) activation_budget_ = *options.ram_budget_bytes - result_.fixed_bytes;
    for (std::size_t p = 0; p < plan_.instructions.size(); ++p) step(p);
    for (NodeId v = 0; v < static_cast<NodeId>(g_.size()); ++v)
      if (!state_[v].computed)
        throw InvalidPlan(fmt::format("the plan never computes '{}' ({}); every node of the training graph must "
                                      "be computed at least once",
                                      g_.node(v).name, v));
    result_.makespan_s = std::max(cpu_s_, bus_s_) + result_.paging_overhead_s;
    sweep_memory(options);
    return result_;
  }

 private:
  [[noreturn]] void invalid(std::size_t p, const std::string& reason) const {
    throw InvalidPlan(fmt::format("instruction {} ({}): {}", p, describe(plan_.instructions[p], g_), reason), p);
  }

  std::string name(NodeId v) const { return fmt::format("'{}' ({})", g_.node(v).name, v); }

  std::string why_absent(NodeId v) const {
    const TensorState& s = state_[v];
    if (!s.computed) return "it has not been computed yet";
    if (s.freed_by != kNever && s.on_storage)
      return fmt::format("freed by instruction {} after its page-out; page it in first", s.freed_by);
    if (s.freed_by != kNever) return fmt::format("freed by instruction {}", s.freed_by);
    return "it is not resident";
  }

  void step(std::size_t p) {
    const Instruction& ins = plan_.instructions[p];
    const NodeId v = ins.node;
    if (v < 0 || static_cast<std::size_t>(v) >= g_.size())
      throw InvalidPlan(fmt::format("instruction {}: node {} is not in graph '{}'", p, v, g_.name()), p);
    TensorState& s = state_[v];
    const NodeCost& c = costs_.nodes[v];
    switch (ins.kind) {
      case InstrKind::Compute: {
        double start = cpu_s_;
        for (NodeId in : g_.node(v).inputs) {
          if (!state_[in].in_ram) invalid(p, fmt::format("input {} is not in RAM: {}", name(in), why_absent(in)));
          start = std::max(start, state_[in].ready_s);
        }
        if (s.in_ram) invalid(p, fmt::format("{} is already in RAM; free it before computing it again", name(v)));
        const std::optional<NodeId> over = overwritten_input(p);
        // Its bytes are written only once a page-out still reading them is done.
        if (over) start = std::max(start, state_[*over].pageout_end_s);
        start = wait_for_memory(start, over ? 0 : c.bytes);
        result_.stall_s += start - cpu_s_;
        cpu_s_ = start + c.compute_time_s;
        result_.compute_time_s += c.compute_time_s;
        result_.compute_energy_j += c.compute_energy_j;
        ++result_.computes;
        if (s.computed) ++result_.recomputes;
        s = {.in_ram = true, .on_storage = s.on_storage, .computed = true, .ready_s = cpu_s_,
             .storage_ready_s = s.storage_ready_s};
        std::optional<std::size_t> taken;
        if (over) {
          TensorState& from = state_[*over];
          taken = from.buffer;
          add_event({start, -costs_.nodes[*over].bytes, p, from.buffer, true});
          result_.buffers[from.buffer].released_by = p;
          from.handed_over = true;
        }
        allocate(s, v, start, p, taken);
        break;
      }
      case InstrKind::PageOut: {
        if (!s.in_ram) invalid(p, fmt::format("{} is not in RAM: {}", name(v), why_absent(v)));
        const double start = std::max({cpu_s_, bus_s_, s.ready_s});
        bus_s_ = start + c.pageout_time_s;
        take_cpu_for_transfer(c);
        s.on_storage = true;
        s.storage_ready_s = bus_s_;
        s.pageout_end_s = bus_s_;
        s.paged_out_by = p;
        result_.pageout_energy_j += c.pageout_energy_j;
        result_.transfer_time_s += c.pageout_time_s;
        ++result_.pageouts;
        break;
      }
      case InstrKind::PageIn: {
        if (!s.on_storage)
          invalid(p, fmt::format("{} is not on secondary storage: it was never paged out", name(v)));
        if (s.in_ram) invalid(p, fmt::format("{} is already in RAM", name(v)));
        const double start = std::max({cpu_s_, bus_s_, s.storage_ready_s});
        bus_s_ = start + c.pagein_time_s;
        take_cpu_for_transfer(c);
        s.in_ram = true;
        s.ready_s = bus_s_;
        s.pageout_end_s = -1;
        s.freed_by = kNever;
        result_.pagein_energy_j += c.pagein_energy_j;
        result_.transfer_time_s += c.pagein_time_s;
        ++result_.pageins;
        allocate(s, v, start, p);  // the buffer is taken when the transfer starts
        break;
      }
      case InstrKind::Free: {
        if (!s.in_ram) {
          if (s.freed_by != kNever) invalid(p, fmt::format("double free: already freed by instruction {}", s.freed_by));
          invalid(p, fmt::format("{} is not in RAM: {}", name(v), why_absent(v)));
        }
        // A transfer still in flight keeps its buffer until it ends: a page-out, or a page-in
        // freed unused (its buffer was taken when it started, which may be after cpu_s_).
        if (!s.handed_over) {
          add_event({std::max({cpu_s_, s.pageout_end_s, s.ready_s}), -c.bytes, p, s.buffer, true});
          result_.buffers[s.buffer].released_by = p;
        }
        s.handed_over = false;
        s.in_ram = false;
        s.freed_by = p;
        s.pageout_end_s = -1;
        break;
      }
    }
  }

  // A transfer's own work on the CPU (its copy and checksum on the I/O thread, its system
  // calls) slows the kernels running meanwhile; counted as the compute it delays, from
  // when it is issued. What real steps showed it costs beyond that lengthens the step but
  // delays no kernel against the transfers, so it is added after the plan.
  void take_cpu_for_transfer(const NodeCost& c) {
    cpu_s_ += c.paging_cpu_s;
    result_.paging_cpu_s += c.paging_cpu_s + c.paging_overhead_s;
    result_.paging_overhead_s += c.paging_overhead_s;
  }

  void allocate(TensorState& s, NodeId v, double start_s, std::size_t p,
                std::optional<std::size_t> in_place_of = std::nullopt) {
    s.buffer = result_.buffers.size();
    result_.buffers.push_back({v, costs_.nodes[v].bytes, 0, 0, p, plan_.instructions.size(), in_place_of});
    add_event({start_s, costs_.nodes[v].bytes, p, s.buffer, false});
  }

  // The input the compute at p writes its output over (in place), if the plan lets it: the
  // graph allows it (in_place_input), and the plan frees that input before its next
  // compute with no page-out of it in between, so nothing reads it after the compute.
  std::optional<NodeId> overwritten_input(std::size_t p) const {
    const NodeId v = plan_.instructions[p].node;
    const std::optional<NodeId> dy = in_place_input(g_, v);
    if (!dy || state_[*dy].handed_over) return std::nullopt;
    for (std::size_t q = p + 1; q < plan_.instructions.size(); ++q) {
      const Instruction& next = plan_.instructions[q];
      if (next.kind == InstrKind::Compute) break;
      if (next.node != *dy) continue;
      if (next.kind == InstrKind::Free) return dy;
      break;  // paged out (or in) before it is freed: its bytes are still wanted
    }
    return std::nullopt;
  }

  void add_event(const MemoryEvent& e) {
    events_.push_back(e);
    if (activation_budget_) pending_.push({e.time_s, e.instruction, e.delta});
  }

  // A compute that needs `bytes` at `start_s` beyond the budget waits for page-outs in
  // flight to release theirs, as the executor waits before reusing their bytes; the MILP
  // counts a page-out's buffer free from the stage after it, not from the transfer's end.
  // Every event already known lies at or after the CPU's clock, which never goes back, so
  // the memory in use at any later start is the events applied up to it.
  double wait_for_memory(double start_s, std::int64_t bytes) {
    if (!activation_budget_) return start_s;
    while (!pending_.empty() && pending_.top().time_s <= start_s) apply_pending();
    if (live_ + bytes <= *activation_budget_) return start_s;
    double waited_to = start_s;
    std::int64_t live = live_;
    auto later = pending_;
    while (live + bytes > *activation_budget_ && !later.empty()) {
      waited_to = later.top().time_s;
      while (!later.empty() && later.top().time_s <= waited_to) live += later.top().delta, later.pop();
    }
    if (live + bytes > *activation_budget_) return start_s;  // waiting would not help: the sweep rejects it
    while (!pending_.empty() && pending_.top().time_s <= waited_to) apply_pending();
    return waited_to;
  }

  void apply_pending() {
    live_ += pending_.top().delta;
    pending_.pop();
  }

  void sweep_memory(const SimulationOptions& options) {
    // Events at the same instant apply in plan order: a zero-time compute still holds its
    // inputs and output together, and a buffer released by an earlier instruction can be
    // reused by a later one.
    std::stable_sort(events_.begin(), events_.end(), [](const MemoryEvent& a, const MemoryEvent& b) {
      return a.time_s != b.time_s ? a.time_s < b.time_s : a.instruction < b.instruction;
    });
    for (auto& b : result_.buffers) b.release_rank = events_.size();
    std::int64_t live = 0;
    result_.timeline.reserve(events_.size());
    for (std::size_t rank = 0; rank < events_.size(); ++rank) {
      const MemoryEvent& e = events_[rank];
      (e.release ? result_.buffers[e.buffer].release_rank : result_.buffers[e.buffer].alloc_rank) = rank;
      live += e.delta;
      POET_CHECK(live >= 0, "negative live memory");
      result_.timeline.push_back({e.time_s, live});
      if (live > result_.peak_activation_bytes) {
        result_.peak_activation_bytes = live;
        result_.peak_instruction = e.instruction;
      }
      if (options.ram_budget_bytes && live + result_.fixed_bytes > *options.ram_budget_bytes) {
        const std::int64_t used = live + result_.fixed_bytes;
        invalid(e.instruction,
                fmt::format("RAM budget exceeded: {} needed ({} activations + {} fixed), budget {}, over by {}",
                            format_bytes_exact(used), format_bytes_exact(live), format_bytes_exact(result_.fixed_bytes),
                            format_bytes_exact(*options.ram_budget_bytes),
                            format_bytes_exact(used - *options.ram_budget_bytes)));
      }
    }
    result_.peak_bytes = result_.peak_activation_bytes + result_.fixed_bytes;
  }

  const Graph& g_;
  const GraphCosts& costs_;
  const Plan& plan_;
  std::vector<TensorState> state_;
  std::vector<MemoryEvent> events_;
  // With a budget: the events not yet reached by the CPU's clock, earliest first (ties in
  // plan order), and the activation bytes in use at the clock.
  struct Pending {
    double time_s;
    std::size_t instruction;
    std::int64_t delta;
    bool operator>(const Pending& o) const { return time_s != o.time_s ? time_s > o.time_s : instruction > o.instruction; }
  };
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending_;
  std::optional<std::int64_t> activation_budget_;
  std::int64_t live_ = 0;
  double cpu_s_ = 0, bus_s_ = 0;
  SimulationResult result_;
};

}  // namespace

std::int64_t counted_fixed_bytes(const Graph& g, const SimulationOptions& options) {
  const FixedMemory fixed = g.fixed_memory(options.optimizer);
  return (options.count_parameters ? fixed.parameter_bytes : 0) +
         (options.count_gradients ? fixed.gradient_bytes + fixed.optimizer_state_bytes : 0);
}

SimulationResult simulate(const Graph& g, const GraphCosts& costs, const Plan& plan, const SimulationOptions& options) {
  return Simulation(g, costs, plan).run(options);
}

SimulationResult simulate_for_budget(const Graph& g, const GraphCosts& costs, const Plan& plan,
                                     const SimulationOptions& options) {
  SimulationOptions unbounded = options;
  unbounded.ram_budget_bytes.reset();
  SimulationResult r = simulate(g, costs, plan, unbounded);
  // Where it fits without waiting, nothing waits under the budget either: the same result.
  if (!options.ram_budget_bytes || r.peak_bytes <= *options.ram_budget_bytes) return r;
  // Validity does not depend on timing: under a budget only the budget can fail, and a
  // larger one waits no more. `fits` holds the result at the least budget that fits so far.
  const auto under = [&](std::int64_t budget) -> std::optional<SimulationResult> {
    SimulationOptions at = options;
    at.ram_budget_bytes = budget;
    try {
      return simulate(g, costs, plan, at);
    } catch (const InvalidPlan&) {
      return std::nullopt;
    }
  };
  if (auto within = under(*options.ram_budget_bytes)) return *within;
  std::int64_t misses = *options.ram_budget_bytes, least = r.peak_bytes;
  SimulationResult fits = r;
  while (least - misses > 1) {
    const std::int64_t middle = misses + (least - misses) / 2;
    if (auto at = under(middle)) {
      least = middle;
      fits = std::move(*at);
    } else {
      misses = middle;
    }
  }
  return fits;
}

}  // namespace poet
