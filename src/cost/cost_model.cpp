#include "poet/cost/cost_model.h"

#include <zlib.h>

#include <algorithm>

namespace poet {

std::uint32_t costs_checksum(const Graph& graph, const GraphCosts& costs) {
  std::vector<double> figures{static_cast<double>(graph.structure_checksum())};
  for (const NodeCost& c : costs.nodes)
    figures.insert(figures.end(), {c.compute_time_s, c.compute_energy_j, c.pageout_time_s, c.pagein_time_s,
                                   c.pageout_energy_j, c.pagein_energy_j, c.paging_cpu_s, c.paging_overhead_s,
                                   static_cast<double>(c.bytes)});
  return static_cast<std::uint32_t>(
      ::crc32_z(0L, reinterpret_cast<const Bytef*>(figures.data()), figures.size() * sizeof(double)));
}

GraphCosts estimate_costs(const Graph& graph, const DeviceProfile& device) {
  GraphCosts costs;
  costs.nodes.reserve(graph.size());
  for (const Node& node : graph.nodes()) {
    NodeCost c;
    c.bytes = node.bytes;
    c.compute_time_s = node.flops / device.flops_per_second;
    c.compute_energy_j = node.flops / device.flops_per_joule;
    const auto b = static_cast<double>(node.bytes);
    c.pageout_time_s = device.pageout_latency_s + b / device.pageout_bytes_per_s;
    c.pagein_time_s = device.pagein_latency_s + b / device.pagein_bytes_per_s;
    c.pageout_energy_j = c.pageout_time_s * device.memory_power_w;
    c.pagein_energy_j = c.pagein_time_s * device.memory_power_w;
    const double charge = device.paging_cpu_per_transfer_s + b * device.paging_cpu_per_byte_s;
    c.paging_cpu_s = charge * std::min(device.paging_charge_scale, 1.0);
    c.paging_overhead_s = charge * std::max(device.paging_charge_scale - 1, 0.0);
    costs.total_compute_time_s += c.compute_time_s;
    costs.total_compute_energy_j += c.compute_energy_j;
    costs.nodes.push_back(c);
  }
  return costs;
}

}  // namespace poet
