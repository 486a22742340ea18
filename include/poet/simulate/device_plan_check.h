// The semantic check of a device plan, so that firmware never runs an illegal one: the
// device format's CRC catches corruption, not a plan that frees a tensor before it is
// computed, pages in what was never paged out, or places two live buffers on the same
// bytes. This replays the plan with the simulator's rules (the one judge) and checks its
// arena offsets with the memory plan's overlap check - no second state machine.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/plan/device_format.h"
#include "poet/simulate/simulator.h"

namespace poet {

struct DevicePlanVerdict {
  std::optional<SimulationResult> simulation;  // the figures, if the plan is legal
  std::string error;                           // why not, naming the instruction
  std::optional<std::size_t> instruction;      // the first illegal instruction, if one is to blame
  bool valid() const { return simulation.has_value(); }
};

// Legal means: made for a graph of `g`'s size; every instruction legal in turn under the
// simulator's rules (inputs resident, page-ins of paged-out tensors, no double free,
// every node computed, the RAM budget of `options` held, also by the whole arena with the
// fixed memory); and every buffer inside the arena, aligned, and apart from every buffer
// live at the same time in plan order (the device runs in plan order and waits for a
// transfer still touching bytes it reuses; see in_plan_order). `costs` must be of the
// device the plan was made for (the budget is held in time). O(N^2) in the buffers at worst.
DevicePlanVerdict check_device_plan(const Graph& g, const GraphCosts& costs, const DevicePlan& plan,
                                    const SimulationOptions& options = {});

}  // namespace poet
