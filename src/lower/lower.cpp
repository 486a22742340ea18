#include "poet/lower/lower.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace poet {

std::vector<BufferLife> in_plan_order_until_transfers_end(const Plan& plan, const SimulationResult& simulation) {
  const std::size_t instructions = plan.instructions.size();
  const auto time_of = [&](std::size_t rank) {
    return rank < simulation.timeline.size() ? simulation.timeline[rank].time_s : std::numeric_limits<double>::infinity();
  };
  // starts_from[q]: the earliest start of a compute at instruction q or later (its buffer's
  // allocation), the time from which every compute the executor reaches at q or after runs.
  std::vector<double> starts_from(instructions + 1, std::numeric_limits<double>::infinity());
  for (const BufferLife& b : simulation.buffers)
    if (plan.instructions[b.created_by].kind == InstrKind::Compute) starts_from[b.created_by] = time_of(b.alloc_rank);
  for (std::size_t q = instructions; q-- > 0;) starts_from[q] = std::min(starts_from[q], starts_from[q + 1]);

  std::vector<BufferLife> buffers = in_plan_order(simulation.buffers);
  for (std::size_t k = 0; k < buffers.size(); ++k) {
    BufferLife& b = buffers[k];
    if (b.released_by >= instructions) continue;
    const double released_s = time_of(simulation.buffers[k].release_rank);
    std::size_t q = b.released_by;
    while (q < instructions && starts_from[q] < released_s) ++q;
    b.release_rank = q;
  }
  return buffers;
}

LoweredPlan lower(const Graph& g, const GraphCosts& costs, const Schedule& schedule, const LowerOptions& options) {
  return lower(g, costs, plan_from_schedule(schedule, g), options);
}

namespace {

// `costs` with every transfer `factor` times as long.
GraphCosts with_slower_transfers(GraphCosts costs, double factor) {
  for (NodeCost& c : costs.nodes) c.pageout_time_s *= factor, c.pagein_time_s *= factor;
  return costs;
}

// The executor waits before it reuses bytes a transfer still touches. Transfers run late
// (one queue: one slow write delays every one behind it), so the arena keeps the bytes of
// transfers in flight as long as the budget leaves room: as if they took the largest margin
// of their predicted time that fits. Without a budget, only what needs no larger arena than
// plain plan order. Sets out.buffers, out.memory (packed with `probe_moves`) and
// out.transfer_margin to the largest margin that fits.
void hold_transfers_bytes(const Graph& g, const GraphCosts& costs, const LowerOptions& options, LoweredPlan& out,
                          int probe_moves) {
  const std::int64_t room = options.simulation.ram_budget_bytes
                                ? *options.simulation.ram_budget_bytes - out.simulation.fixed_bytes
                                : out.memory.arena_bytes;
  const auto hold_if_it_fits = [&](double margin) {
    const SimulationResult slower = margin == 1 ? out.simulation : simulate(g, with_slower_transfers(costs, margin), out.plan);
    std::vector<BufferLife> held = in_plan_order_until_transfers_end(out.plan, slower);
    MemoryPlan memory = plan_memory_greedy(held, options.alignment, probe_moves);
    if (memory.arena_bytes > std::max(room, out.memory.arena_bytes)) return false;
    out.buffers = std::move(held);
    out.memory = std::move(memory);
    out.transfer_margin = margin;
    return true;
  };
  if (hold_if_it_fits(kMaxTransferMargin) || !hold_if_it_fits(1)) return;
  double fits = 1, too_large = kMaxTransferMargin;
  for (int i = 0; i < kTransferMarginHalvings; ++i) {
    const double middle = std::sqrt(fits * too_large);
    (hold_if_it_fits(middle) ? fits : too_large) = middle;
  }
}

}  // namespace

LoweredPlan lower(const Graph& g, const GraphCosts& costs, Plan plan, const LowerOptions& options) {
  LoweredPlan out;
  if (options.plan_transfers) {
    // Without a budget, the schedule's own peak is the one to keep: it was made for some
    // budget, and page-ins moved earlier without a bound would undo its paging.
    SimulationOptions keep = options.simulation;
    if (!keep.ram_budget_bytes) keep.ram_budget_bytes = simulate(g, costs, plan, keep).peak_bytes;
    out.transfers = plan_transfers(g, costs, plan, keep);
    plan = std::exchange(out.transfers.plan, {});
  }
  out.plan = std::move(plan);
  // Simulated once more after the transfers move: with the waits for memory the executor makes.
  out.simulation = simulate(g, costs, out.plan, options.simulation);
  out.buffers = in_plan_order(out.simulation.buffers);
  if (out.simulation.pageins + out.simulation.pageouts > 0) {
    // Which margin fits is asked of the greedy orders alone (the order search takes up to 40
    // times as long: docs/BENCHMARKS.md); the buffers kept get the search, which never packs
    // them larger.
    constexpr int kProbe = 0;
    out.memory = plan_memory_greedy(out.buffers, options.alignment, kProbe);
    hold_transfers_bytes(g, costs, options, out, kProbe);
  }
  out.memory = plan_memory_greedy(out.buffers, options.alignment);
  return out;
}

}  // namespace poet
