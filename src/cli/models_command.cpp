#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "poet/backward/backward.h"
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
      fmt::print("{:<16} {:>6} {:>6} {:>11} {:>10}  {}\n", "model", "layers", "nodes", "parameters", "reference",
                 "description");
    for (const auto& m : model_catalog()) {
      // The nodes every other command plans: the training graph's (as `poet graph` counts them).
      const Graph g = build_model_training_graph(m.name, {}, BackwardMode::Autodiff);
      const auto forward = std::ranges::count_if(g.nodes(), [](const Node& n) { return n.role != Role::Backward; });
      const std::size_t layers = build_forward_graph(m.name, {}).size();
      const std::int64_t parameter_bytes = g.fixed_memory().parameter_bytes;
      if (*json)
        all.push_back({{"name", m.name},
                       {"layers", layers},
                       {"forward_nodes", forward},
                       {"nodes", g.size()},
                       {"parameter_bytes", parameter_bytes},
                       {"in_reference", m.in_reference},
                       {"description", m.description}});
      else
        fmt::print("{:<16} {:>6} {:>6} {:>11} {:>10}  {}\n", m.name, layers, g.size(),
                   format_bytes(static_cast<double>(parameter_bytes)), m.in_reference ? "yes" : "no", m.description);
    }
    if (*json)
      fmt::print("{}\n", json_text(all, 2));
    else
      fmt::print("\nlayers: the model's operations up to and including the loss; nodes: its training graph's at batch "
                 "size 1 (--backward autodiff: the forward with what the backward keeps, then the backward), as "
                 "'poet graph' counts them.\n");
  });
}

}  // namespace poet::cli
