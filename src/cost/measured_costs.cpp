// Planning with measured costs. A measured profile is only trusted for the graph it was
// measured on: the same nodes, in the same order, with the same ops and shapes.
#include <fmt/format.h>

#include <algorithm>

#include "poet/cost/cost_model.h"
#include "poet/util/error.h"

namespace poet {
namespace {

std::int64_t batch_size_of(const Graph& graph) {
  for (const Node& n : graph.nodes())
    if (n.op == OpKind::Input && !n.shape.empty()) return n.shape.front();
  return 0;
}

// What to do, whatever the graph came from: the cost module does not know whether a zoo
// model, an ONNX file (named after the file) or a graph file.
std::string profile_fix(const Graph& graph) {
  // `poet profile` has no --backward: it measures the autodiff graph.
  if (std::ranges::any_of(graph.nodes(), [](const Node& n) { return n.op == OpKind::ChainGradient; }))
    return "poet profile measures the --backward autodiff graph: plan with --backward autodiff (the default), or "
           "with a FLOP-model platform";
  return fmt::format("re-profile this graph on the target machine with `poet profile` and the --model, --onnx or "
                     "--graph it came from, at --batch-size {}, or plan with a FLOP-model platform",
                     batch_size_of(graph));
}

}  // namespace

void check_profile_matches(const Graph& graph, const MeasuredNodes& measured, std::string_view device_name) {
  const auto mismatch = [&](const std::string& what) {
    const std::string why = measured.graph == graph.name()
                                ? what
                                : fmt::format("it was measured for graph '{}' ({})", measured.graph, what);
    return InputError(fmt::format("device profile '{}' does not fit graph '{}': {}; {}", device_name, graph.name(), why,
                                  profile_fix(graph)));
  };
  if (measured.batch_size != batch_size_of(graph))
    throw mismatch(fmt::format("its batch size is {}, the graph's {} (give --batch-size {} to plan at the profile's "
                               "batch)",
                               measured.batch_size, batch_size_of(graph), measured.batch_size));
  const std::size_t common = std::min(measured.nodes.size(), graph.size());
  for (std::size_t i = 0; i < common; ++i) {
    const MeasuredNode& m = measured.nodes[i];
    const Node& n = graph.node(static_cast<NodeId>(i));
    if (m.name != n.name)
      throw mismatch(fmt::format("node {} '{}' is called '{}' in the profile", i, n.name, m.name));
    if (m.op != op_name(n.op))
      throw mismatch(fmt::format("node {} '{}' is a {} in the graph but a {} in the profile", i, n.name,
                                 op_name(n.op), m.op));
    if (m.shape != n.shape)
      throw mismatch(fmt::format("node {} '{}' has shape {} in the graph but {} in the profile", i, n.name,
                                 shape_string(n.shape), shape_string(m.shape)));
  }
  if (measured.nodes.size() < graph.size()) {
    const std::size_t after = graph.size() - common - 1;
    throw mismatch(fmt::format("the profile has {} nodes, the graph {}: it lacks node {} '{}'{}", measured.nodes.size(),
                               graph.size(), common, graph.node(static_cast<NodeId>(common)).name,
                               after == 0 ? "" : fmt::format(" and the {} after it", after)));
  }
  if (measured.nodes.size() > graph.size())
    throw mismatch(fmt::format("the profile has {} nodes, the graph {}; profile node {} '{}' is not in the graph",
                               measured.nodes.size(), graph.size(), common, measured.nodes[common].name));
  // Every node the same, by name, operator and shape: the costs are this graph's, whatever
  // the graph is called (an ONNX model is named after its file, which may be renamed).
}

GraphCosts costs_from_profile(const Graph& graph, const DeviceProfile& device) {
  if (!device.nodes)
    throw InputError(fmt::format("device profile '{}' has no measured \"nodes\" section; {}", device.name,
                                 profile_fix(graph)));
  check_profile_matches(graph, *device.nodes, device.name);
  // The paging figures are per byte, not per node, so the FLOP model's paging is the measured one.
  GraphCosts costs = estimate_costs(graph, device);
  costs.total_compute_time_s = costs.total_compute_energy_j = 0;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    NodeCost& c = costs.nodes[i];
    c.compute_time_s = device.nodes->nodes[i].compute_time_s;
    c.compute_energy_j = device.nodes->nodes[i].compute_energy_j;
    costs.total_compute_time_s += c.compute_time_s;
    costs.total_compute_energy_j += c.compute_energy_j;
  }
  return costs;
}

GraphCosts costs_for(const Graph& graph, const DeviceProfile& device) {
  return device.nodes ? costs_from_profile(graph, device) : estimate_costs(graph, device);
}

}  // namespace poet
