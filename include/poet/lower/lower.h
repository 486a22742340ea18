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
  std::vector<BufferLife> buffers;  // simulation.buffers in plan order (memory_plan.h's in_plan_order)
  MemoryPlan memory;                // arena offsets of `buffers` (plan_memory_greedy)
  TransferPlanResult transfers;     // what the transfer planner moved; its `plan` left empty
};

// Throws InvalidPlan (naming the instruction) if the simulator rejects the plan, the
// budget included. Cost: the transfer planner's simulations (transfer_planner.h), one
// more, and the greedy memory plan.
LoweredPlan lower(const Graph& g, const GraphCosts& costs, const Schedule& schedule, const LowerOptions& options = {});
// The same from a plan already made (a plan file): the transfer planner runs if asked.
LoweredPlan lower(const Graph& g, const GraphCosts& costs, Plan plan, const LowerOptions& options = {});

}  // namespace poet
