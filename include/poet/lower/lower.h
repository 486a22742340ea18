// The one lowering: how a schedule becomes something to run, show, write or execute.
// Algorithm 2 (plan_from_schedule), the transfer planner (page-ins just in time,
// page-outs overlapping compute), one simulation of the result under the budget (the
// prediction), and the static memory plan of its buffers in plan order (the arena the
// executor and a device run in). solve, train, the CLI and the executor take its result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/lower/transfer_planner.h"
#include "poet/plan/buffer_life.h"
#include "poet/plan/memory_plan.h"
#include "poet/plan/plan.h"
#include "poet/schedule/schedule.h"
#include "poet/simulate/simulator.h"

namespace poet {

struct LowerOptions {
  SimulationOptions simulation = {};  // the budget the plan keeps, and how memory is counted
  bool plan_transfers = true;    // false: paging stays where the schedule puts it
  std::int64_t alignment = 16;   // of every buffer's offset in the arena
};

struct LoweredPlan {
  Plan plan;
  SimulationResult simulation;      // of `plan` under LowerOptions::simulation: the prediction
  // simulation.buffers in plan order, each freed while a transfer still touches it held
  // until that transfer ends even if transfers ran `transfer_margin` times slower than
  // predicted (in_plan_order_until_transfers_end; the largest margin up to
  // kMaxTransferMargin whose arena fits the budget's room), else plain plan order
  // (memory_plan.h's in_plan_order; transfer_margin 0).
  std::vector<BufferLife> buffers;
  double transfer_margin = 0;
  MemoryPlan memory;                // arena offsets of `buffers` (plan_memory_greedy)
  TransferPlanResult transfers;     // what the transfer planner moved; its `plan` left empty
};

// The buffers of `simulation` (of `plan`) in plan order, each freed while a transfer still
// reads or fills it (a page-out in flight, a page-in freed unused) held to the first
// instruction from which every compute starts, in the simulation, after that transfer
// ends. An arena planned over these gives no compute the bytes of a transfer the
// simulator had ended, so the executor never waits where the simulator sees no stall
// (it waits before reusing bytes a transfer still touches, transfer_tracker.h). An arena
// over plain plan order packs such bytes for the very next compute: traced on
// resnet18_cifar, most of the time Capuchin's steps waited was computes of the forward
// claiming the bytes of a page-out still in flight (docs/BENCHMARKS.md).
std::vector<BufferLife> in_plan_order_until_transfers_end(const Plan& plan, const SimulationResult& simulation);

// How much slower than predicted the transfers may run before a compute reuses their bytes:
// the largest margin in [1, kMaxTransferMargin] whose arena fits, found by
// kTransferMarginHalvings bisections of the ratio (to within 8^(1/32), 7%). A step's
// transfers run later than the profile, which times them one at a time, predicts: on
// resnet18_cifar at 2 threads, Capuchin's plans at 70% and 50% fit no margin of 2, and
// with 1.75 and 1.25 instead of 1 their steps waited 0.2 and 0.6-1.2 ms for transfers
// instead of 1.7-2.3 and 1.1-2.3 ms (docs/BENCHMARKS.md).
inline constexpr double kMaxTransferMargin = 8;
inline constexpr int kTransferMarginHalvings = 5;

// Throws InvalidPlan (naming the instruction) if the simulator rejects the plan, the
// budget included. Cost: the transfer planner's simulations (transfer_planner.h), one
// more, and the memory plan with its order search; for a plan that pages, up to
// 2 + kTransferMarginHalvings more simulations, each margin's arena packed by the greedy
// orders alone (plan_memory_greedy's search_moves = 0).
LoweredPlan lower(const Graph& g, const GraphCosts& costs, const Schedule& schedule, const LowerOptions& options = {});
// The same from a plan already made (a plan file): the transfer planner runs if asked.
LoweredPlan lower(const Graph& g, const GraphCosts& costs, Plan plan, const LowerOptions& options = {});

}  // namespace poet
