// The baselines that pick their own parameter for a RAM budget, by the names the command
// line, the sweep and training use for them.
#pragma once

#include <map>
#include <string>

#include "poet/baselines/baseline_result.h"

namespace poet {

using BaselineForBudget = BaselineResult (*)(const Graph&, const GraphCosts&, const SimulationOptions&);

// chen_sqrt, chen_greedy, revolve, dtr, capuchin, pofo.
const std::map<std::string, BaselineForBudget>& baselines_for_budget();

}  // namespace poet
