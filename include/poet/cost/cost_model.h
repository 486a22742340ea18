// The cost model: what computing, paging out and paging in each node costs on a device.
#pragma once

#include <cstdint>
#include <vector>

#include "poet/cost/device.h"
#include "poet/graph/graph.h"

namespace poet {

struct NodeCost {
  double compute_time_s = 0;
  double compute_energy_j = 0;
  double pageout_time_s = 0;   // latency + bytes / throughput
  double pagein_time_s = 0;
  double pageout_energy_j = 0; // time x memory power
  double pagein_energy_j = 0;
  std::int64_t bytes = 0;      // output bytes (RAM cost)
};

struct GraphCosts {
  std::vector<NodeCost> nodes;
  double total_compute_time_s = 0;
  double total_compute_energy_j = 0;
};

// The reference's FLOP-based model: time = FLOPs / FLOPS, energy = FLOPs / (FLOP/J).
GraphCosts estimate_costs(const Graph& graph, const DeviceProfile& device);

}  // namespace poet
