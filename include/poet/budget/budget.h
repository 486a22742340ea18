// RAM budgets in one place: the fixed memory a budget holds (as the simulator counts it,
// simulator.h's counted_fixed_bytes), the least budget any schedule fits in, and budgets
// given in bytes or as a percent of the compute-once activation peak.
#pragma once

#include <cstdint>
#include <string_view>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/simulate/simulator.h"

namespace poet {

// What a percent budget is a percent of: checkpoint-all's unconstrained run, with the
// fixed memory `counting` holds on top.
struct BudgetScale {
  std::int64_t fixed_bytes = 0;
  std::int64_t activation_peak_bytes = 0;
  // Fixed memory + `percent`% of the activation peak, rounded down to a byte.
  std::int64_t bytes_at(double percent) const;
  // The percent of the activation peak that `bytes` leaves for activations.
  double percent_of(std::int64_t bytes) const;
};
BudgetScale budget_scale(const Graph& g, const GraphCosts& costs, const SimulationOptions& counting);

// Bytes ("3000000", "3MB", "2.5MiB") or a percent ("70%": scale.bytes_at(70)). Throws
// InputError naming `what` (the option) and the forms it takes.
std::int64_t parse_ram_budget(std::string_view text, const BudgetScale& scale, std::string_view what = "--ram-budget");

// The least budget any schedule fits in: the fixed memory, and the node whose computation
// needs the most bytes resident at once (its output and its inputs).
struct BudgetFloor {
  std::int64_t bytes = 0;
  NodeId node = 0;  // the node that needs them
};
BudgetFloor smallest_workable_budget(const Graph& g, const SimulationOptions& counting);

}  // namespace poet
