#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "poet/models/zoo.h"
#include "poet/util/json_file.h"
#include "poet/util/units.h"

namespace poet::cli {

void add_models_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "List the model zoo");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print the zoo as a JSON array");
  cmd->callback([json] {
    nlohmann::json all = nlohmann::json::array();
    if (!*json)
      fmt::print("{:<16} {:>6} {:>11} {:>10}  {}\n", "model", "nodes", "parameters", "reference", "description");
    for (const auto& m : model_catalog()) {
      const Graph g = build_forward_graph(m.name, {});
      const std::int64_t parameter_bytes = g.fixed_memory().parameter_bytes;
      if (*json)
        all.push_back({{"name", m.name},
                       {"forward_nodes", g.size()},
                       {"parameter_bytes", parameter_bytes},
                       {"in_reference", m.in_reference},
                       {"description", m.description}});
      else
        fmt::print("{:<16} {:>6} {:>11} {:>10}  {}\n", m.name, g.size(),
                   format_bytes(static_cast<double>(parameter_bytes)), m.in_reference ? "yes" : "no", m.description);
    }
    if (*json)
      fmt::print("{}\n", json_text(all, 2));
    else
      fmt::print("\nnodes: forward graph at batch size 1, up to and including the loss.\n");
  });
}

}  // namespace poet::cli
