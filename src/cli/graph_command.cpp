#include <fmt/format.h>

#include <memory>
#include <string>

#include "commands.h"
#include "graph_source.h"
#include "poet/cost/cost_model.h"
#include "poet/cost/graph_costs_json.h"
#include "poet/graph/op_table.h"
#include "poet/util/units.h"

namespace poet::cli {
namespace {

void print_summary(const Graph& g, const GraphCosts& costs, const DeviceProfile& device) {
  std::size_t forward = 0, backward = 0;
  for (const auto& n : g.nodes()) (n.role == Role::Backward ? backward : forward)++;
  const FixedMemory fixed = g.fixed_memory();
  fmt::print("graph       {} on {}\n", g.name(), device.name);
  fmt::print("nodes       {} ({} forward incl. loss, {} backward), {} edges\n", g.size(), forward, backward,
             g.edge_count());
  fmt::print("compute     {} and {} for one training step ({} FLOP)\n", format_seconds(costs.total_compute_time_s),
             format_joules(costs.total_compute_energy_j), format_count(g.total_flops()));
  fmt::print("activations {} forward ({})\n", format_bytes(static_cast<double>(g.forward_activation_bytes())),
             format_bytes_exact(g.forward_activation_bytes()));
  // Parameters that are not trained (batch norm's running statistics, the fixed scale and
  // shift of a norm without affine): said only where there are some, and which.
  bool running = false, fixed_norm = false;
  for (const Node& n : g.nodes()) {
    running = running || (n.role == Role::Forward && n.op == OpKind::BatchNorm2d);
    fixed_norm = fixed_norm || (n.role == Role::Forward && op_def(n.op).statistics && !n.attrs.affine);
  }
  const std::string untrained = running && fixed_norm ? " with batch-norm running statistics and fixed norm scales"
                                : running             ? " with batch-norm running statistics"
                                : fixed_norm          ? " with fixed norm scales"
                                                      : "";
  fmt::print("parameters  {} trained, as PyTorch counts them; {} ({}){}; "
             "gradients {} (the trained ones); optimizer state x1 (momentum), x2 (Adam) of the gradients\n",
             fmt::group_digits(trainable_parameters(g)),
             format_bytes(static_cast<double>(fixed.parameter_bytes)), format_bytes_exact(fixed.parameter_bytes),
             untrained, format_bytes_exact(fixed.gradient_bytes));
}

}  // namespace

void add_graph_command(CLI::App& app) {
  struct Options {
    GraphSource source;
    std::string json_file;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("graph", "Build a training graph and summarize its costs on a device");
  opts->source.add_options(*cmd);
  cmd->add_option("--json", opts->json_file, "Write the graph with per-node costs to this JSON file")
      ->transform(output_file());
  cmd->callback([opts] {
    check_files_apart(opts->source.input_files(), {{"--json", opts->json_file}});
    const DeviceProfile device = resolve_device(opts->source.platform);
    const Graph graph = opts->source.load();
    const GraphCosts costs = costs_for(graph, device);
    print_summary(graph, costs, device);
    if (!opts->json_file.empty()) {
      save_graph_with_costs(graph, costs, opts->json_file);
      fmt::print("wrote       {}\n", opts->json_file);
    }
  });
}

}  // namespace poet::cli
