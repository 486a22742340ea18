// The cost model: what computing, paging out and paging in each node costs on a device.
#pragma once

#include <cstdint>
#include <string_view>
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
  double paging_cpu_s = 0;     // compute time a transfer of it (either way) takes from the kernels
  double paging_overhead_s = 0;  // and the step time it costs beyond that (DeviceProfile::paging_charge_scale)
  std::int64_t bytes = 0;      // output bytes (RAM cost)
};

// The most a transfer of the node (in or out) adds to a step: the bus's time, and the CPU
// time it takes from the kernels and beyond them. A solver's deadline counts this: the
// simulator's stalls are time the bus is busy, so a schedule within the deadline by these
// counts is within it in the simulator too, however costly the CPU's share of a transfer.
inline double pagein_step_time_s(const NodeCost& c) { return c.pagein_time_s + c.paging_cpu_s + c.paging_overhead_s; }
inline double pageout_step_time_s(const NodeCost& c) { return c.pageout_time_s + c.paging_cpu_s + c.paging_overhead_s; }

struct GraphCosts {
  std::vector<NodeCost> nodes;
  double total_compute_time_s = 0;
  double total_compute_energy_j = 0;
};

// A CRC-32 of the graph's structure (Graph::structure_checksum) and of every figure in
// `costs`: what a result depends on beyond the options, so that one made with an edited
// device profile or graph file is told apart from this one's.
std::uint32_t costs_checksum(const Graph& graph, const GraphCosts& costs);

// The reference's FLOP-based model: time = FLOPs / FLOPS, energy = FLOPs / (FLOP/J).
GraphCosts estimate_costs(const Graph& graph, const DeviceProfile& device);

// Throws InputError naming the first difference (graph name, batch size, node count, or a
// node's name, op or shape) between a profile's measured nodes and `graph`, and the fix:
// re-profile this graph with `poet profile`.
void check_profile_matches(const Graph& graph, const MeasuredNodes& measured, std::string_view device_name);

// Measured costs: each node's compute time and energy from device.nodes (which must match
// the graph, see check_profile_matches); paging as in estimate_costs, from the device's
// storage figures. Throws InputError if the device has no measured nodes.
GraphCosts costs_from_profile(const Graph& graph, const DeviceProfile& device);

// What every planning command uses: measured costs when the device carries a "nodes"
// section, the FLOP model otherwise.
GraphCosts costs_for(const Graph& graph, const DeviceProfile& device);

}  // namespace poet
