#include "poet/cost/graph_costs_json.h"

#include <nlohmann/json.hpp>

#include "poet/graph/graph_json.h"
#include "poet/util/atomic_file.h"
#include "poet/util/json_file.h"

namespace poet {

nlohmann::json graph_with_costs_to_json(const Graph& g, const GraphCosts& costs) {
  nlohmann::json j = graph_to_json(g);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const NodeCost& c = costs.nodes.at(i);
    j["nodes"][i]["cost"] = {{"compute_time_s", c.compute_time_s},     {"compute_energy_j", c.compute_energy_j},
                             {"pageout_time_s", c.pageout_time_s},     {"pagein_time_s", c.pagein_time_s},
                             {"pageout_energy_j", c.pageout_energy_j}, {"pagein_energy_j", c.pagein_energy_j},
                             {"paging_cpu_s", c.paging_cpu_s},         {"paging_overhead_s", c.paging_overhead_s}};
  }
  return j;
}

void save_graph_with_costs(const Graph& g, const GraphCosts& costs, const std::string& path) {
  write_file_atomically(path, json_text(graph_with_costs_to_json(g, costs), 1) + "\n");
}

}  // namespace poet
