#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "graph_source.h"
#include "poet/plan/device_format.h"
#include "poet/simulate/device_plan_check.h"
#include "poet/util/json_file.h"
#include "poet/util/units.h"

namespace poet::cli {

void add_check_plan_command(CLI::App& app) {
  struct Options {
    GraphSource source;
    BudgetOptions budget;
    std::string plan_file;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "check-plan",
      "Check a device plan (.bin or C header) against its graph before firmware runs it: exit 0 if legal, 2 if not");
  opts->source.add_options(*cmd);
  opts->budget.add_options(*cmd);
  cmd->add_option("--plan", opts->plan_file, "The device plan: the .bin of --device-plan or the .h of --c-header")
      ->required()
      ->transform(input_file());
  cmd->add_flag("--json", opts->json, "Print the verdict as JSON");
  cmd->callback([opts] {
    const Graph g = opts->source.load();
    const GraphCosts costs = costs_for(g, resolve_device(opts->source.platform));
    const SimulationOptions options = opts->budget.resolve(g, costs);
    const DevicePlan plan = load_device_plan(opts->plan_file);
    const DevicePlanVerdict verdict = check_device_plan(g, costs, plan, options);
    if (opts->json) {
      nlohmann::json j = {{"plan", opts->plan_file},
                          {"valid", verdict.valid()},
                          {"instructions", plan.plan.instructions.size()},
                          {"arena_bytes", plan.arena_bytes}};
      if (verdict.valid()) {
        j["simulation"] = simulation_to_json(*verdict.simulation, options);
      } else {
        j["error"] = verdict.error;
        j["instruction"] = verdict.instruction ? nlohmann::json(*verdict.instruction) : nlohmann::json(nullptr);
      }
      fmt::print("{}\n", json_text(j, 2));
      if (!verdict.valid()) throw ExitWith{kExitBadInput};
      return;
    }
    if (!verdict.valid())
      throw InputError(fmt::format("device plan '{}' is illegal for graph '{}': {}", opts->plan_file, g.name(),
                                   verdict.error));
    fmt::print("legal       {}: {} instructions, arena {}, peak {} ({} activations + {} fixed)\n", opts->plan_file,
               plan.plan.instructions.size(), format_bytes_exact(plan.arena_bytes),
               format_bytes_exact(verdict.simulation->peak_bytes),
               format_bytes_exact(verdict.simulation->peak_activation_bytes),
               format_bytes_exact(verdict.simulation->fixed_bytes));
    // Without a budget the simulator's computes do not wait for page-outs, so its peak can
    // pass the arena; the device, running in plan order, never does.
    if (!options.ram_budget_bytes && verdict.simulation->pageouts > 0)
      fmt::print("note        no --ram-budget: computes did not wait for page-outs to free their RAM, so the peak "
                 "can pass the arena, which the device never does; give the budget the plan was made for to see "
                 "its peak under it\n");
  });
}

}  // namespace poet::cli
