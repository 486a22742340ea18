// Training graphs as JSON files (schema: docs/FORMATS.md), so users can bring graphs made
// elsewhere. Loading validates everything and names the offending node or edge.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"

namespace poet {

// With costs, every node also carries its compute / page-out / page-in time and energy.
nlohmann::json graph_to_json(const Graph& g, const GraphCosts* costs = nullptr);
Graph graph_from_json(const nlohmann::json& j, std::string_view origin);
Graph load_graph(const std::string& path);
void save_graph(const Graph& g, const std::string& path, const GraphCosts* costs = nullptr);

}  // namespace poet
