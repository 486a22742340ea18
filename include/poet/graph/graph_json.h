// Training graphs as JSON files (schema: docs/FORMATS.md), so users can bring graphs made
// elsewhere. Loading validates everything and names the offending node or edge.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "poet/graph/graph.h"

namespace poet {

// cost/graph_costs_json.h writes the same with every node's costs on a device.
nlohmann::json graph_to_json(const Graph& g);
Graph graph_from_json(const nlohmann::json& j, std::string_view origin);
Graph load_graph(const std::string& path);
void save_graph(const Graph& g, const std::string& path);

}  // namespace poet
