// A training graph as JSON (graph/graph_json.h) with each node's costs on a device, as
// `poet graph --json` writes it: loading it back reads the graph and ignores the costs.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"

namespace poet {

// Every node also carries "cost": its compute / page-out / page-in time and energy.
nlohmann::json graph_with_costs_to_json(const Graph& g, const GraphCosts& costs);
void save_graph_with_costs(const Graph& g, const GraphCosts& costs, const std::string& path);

}  // namespace poet
