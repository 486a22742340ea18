// Simulated figures that several baseline tests measure schedules against.
#pragma once

#include <cstdint>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/simulate/simulator.h"
#include "hand_graph.h"

namespace poet::testing {

inline std::int64_t checkpoint_all_peak(const Graph& g, const GraphCosts& costs) {
  return simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g)).peak_bytes;
}

inline SimulationResult simulate_on_hand_device(const Graph& g, const Schedule& s) {
  return simulate(g, estimate_costs(g, hand_device()), plan_from_schedule(s, g));
}

}  // namespace poet::testing
