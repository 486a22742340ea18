#include "poet/lower/transfer_planner.h"

#include <optional>

namespace poet {
namespace {

// A candidate plan's makespan and stall, or nothing if it is invalid or over budget.
std::optional<SimulationResult> try_plan(const Graph& g, const GraphCosts& costs, const Plan& plan,
                                         const SimulationOptions& options) {
  try {
    return simulate(g, costs, plan, options);
  } catch (const InvalidPlan&) {
    return std::nullopt;
  }
}

Plan moved(const Plan& plan, std::size_t from, std::size_t to) {
  Plan out = plan;
  auto& ins = out.instructions;
  const Instruction moving = ins[from];
  ins.erase(ins.begin() + static_cast<std::ptrdiff_t>(from));
  ins.insert(ins.begin() + static_cast<std::ptrdiff_t>(to), moving);
  return out;
}

// The position right after the last instruction before `p` that touches the same tensor:
// a paging instruction cannot move past it.
std::size_t earliest_position(const Plan& plan, std::size_t p, const Graph& g) {
  const NodeId v = plan.instructions[p].node;
  for (std::size_t q = p; q-- > 0;) {
    const Instruction& ins = plan.instructions[q];
    if (ins.node == v) return q + 1;
    if (ins.kind == InstrKind::Compute)
      for (NodeId in : g.node(ins.node).inputs)
        if (in == v) return q + 1;
  }
  return 0;
}

}  // namespace

TransferPlanResult plan_transfers(const Graph& g, const GraphCosts& costs, const Plan& plan,
                                  const SimulationOptions& options, std::size_t window) {
  TransferPlanResult result;
  result.plan = plan;
  SimulationResult best = simulate(g, costs, plan, options);  // throws if the input is invalid
  result.makespan_before_s = best.makespan_s;
  result.stall_before_s = best.stall_s;

  // Page-outs: as early as possible, so the bus and the buffer are released sooner.
  for (std::size_t p = 0; p < result.plan.instructions.size(); ++p) {
    if (result.plan.instructions[p].kind != InstrKind::PageOut) continue;
    const std::size_t earliest = earliest_position(result.plan, p, g);
    const std::size_t limit = p > window ? std::max(earliest, p - window) : earliest;
    for (std::size_t q = limit; q < p; ++q) {
      Plan candidate = moved(result.plan, p, q);
      if (auto r = try_plan(g, costs, candidate, options); r && r->makespan_s <= best.makespan_s) {
        result.plan = std::move(candidate);
        best = *r;
        ++result.moved_pageouts;
        break;
      }
    }
  }

  // Page-ins: walk each one earlier while that shortens the makespan; keep the latest
  // position that reaches the shortest makespan found. A move can make room on the bus for
  // another, so repeat while passes still help.
  for (int pass = 0; pass < 4 && best.stall_s > 0; ++pass) {
    std::size_t moves = 0;
    for (std::size_t p = 0; p < result.plan.instructions.size() && best.stall_s > 0; ++p) {
      if (result.plan.instructions[p].kind != InstrKind::PageIn) continue;
      const std::size_t earliest = earliest_position(result.plan, p, g);
      std::optional<std::size_t> best_position;
      for (std::size_t q = p; q-- > earliest && p - q <= window;) {
        const auto r = try_plan(g, costs, moved(result.plan, p, q), options);
        if (!r) break;  // earlier positions only hold the buffer longer
        if (r->makespan_s < best.makespan_s) {
          best = *r;
          best_position = q;
          if (best.stall_s == 0) break;
        }
      }
      if (best_position) {
        result.plan = moved(result.plan, p, *best_position);
        ++moves;
      }
    }
    result.moved_pageins += moves;
    if (moves == 0) break;
  }
  result.makespan_after_s = best.makespan_s;
  result.stall_after_s = best.stall_s;
  return result;
}

}  // namespace poet
