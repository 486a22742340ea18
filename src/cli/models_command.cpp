#include <fmt/format.h>

#include "commands.h"
#include "poet/models/zoo.h"
#include "poet/util/units.h"

namespace poet::cli {

void add_models_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "List the model zoo");
  cmd->callback([] {
    fmt::print("{:<16} {:>6} {:>11} {:>10}  {}\n", "model", "nodes", "parameters", "reference", "description");
    for (const auto& m : model_catalog()) {
      const Graph g = build_forward_graph(m.name, {});
      fmt::print("{:<16} {:>6} {:>11} {:>10}  {}\n", m.name, g.size(),
                 format_bytes(static_cast<double>(g.fixed_memory().parameter_bytes)), m.in_reference ? "yes" : "no",
                 m.description);
    }
    fmt::print("\nnodes: forward graph at batch size 1, up to and including the loss.\n");
  });
}

}  // namespace poet::cli
