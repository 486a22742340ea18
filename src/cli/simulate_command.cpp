#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "files_apart.h"
#include "graph_source.h"
#include "poet/plan/plan.h"
#include "poet/util/error.h"
#include "poet/util/json_file.h"
#include "poet/util/units.h"

namespace poet::cli {

nlohmann::json simulation_to_json(const SimulationResult& r, const SimulationOptions& o) {
  auto timeline = nlohmann::json::array();  // [seconds, activation bytes] after each memory event
  for (const auto& p : r.timeline) timeline.push_back({p.time_s, p.bytes});
  return {{"timeline", std::move(timeline)},{"peak_bytes", r.peak_bytes},
          {"peak_activation_bytes", r.peak_activation_bytes},
          {"fixed_bytes", r.fixed_bytes},
          {"ram_budget_bytes", o.ram_budget_bytes ? nlohmann::json(*o.ram_budget_bytes) : nlohmann::json(nullptr)},
          {"compute_energy_j", r.compute_energy_j},
          {"pagein_energy_j", r.pagein_energy_j},
          {"pageout_energy_j", r.pageout_energy_j},
          {"total_energy_j", r.total_energy_j()},
          {"compute_time_s", r.compute_time_s},
          {"makespan_s", r.makespan_s},
          {"stall_s", r.stall_s},
          {"paging_cpu_s", r.paging_cpu_s},
          {"paging_overhead_s", r.paging_overhead_s},
          {"computes", r.computes},
          {"recomputes", r.recomputes},
          {"pageins", r.pageins},
          {"pageouts", r.pageouts}};
}

void print_simulation(const SimulationResult& r, const SimulationOptions& o) {
  fmt::print("peak RAM    {} ({} activations + {} fixed){}\n", format_bytes(static_cast<double>(r.peak_bytes)),
             format_bytes_exact(r.peak_activation_bytes), format_bytes_exact(r.fixed_bytes),
             o.ram_budget_bytes ? fmt::format(", budget {}", format_bytes_exact(*o.ram_budget_bytes)) : "");
  fmt::print("energy      {} = {} compute + {} page-in + {} page-out\n", format_joules(r.total_energy_j()),
             format_joules(r.compute_energy_j), format_joules(r.pagein_energy_j), format_joules(r.pageout_energy_j));
  // A measured profile charges the transfers' own CPU work (docs/SIMULATOR.md): it is part
  // of the makespan beside the compute and the stall.
  fmt::print("time        {} makespan ({} compute, {} stalled on paging{})\n", format_seconds(r.makespan_s),
             format_seconds(r.compute_time_s), format_seconds(r.stall_s),
             r.paging_cpu_s > 0 ? fmt::format(", {} the transfers' work on the CPU", format_seconds(r.paging_cpu_s))
                                : "");
  fmt::print("operations  {} ({}), {}, {}\n", counted(r.computes, "compute"), counted(r.recomputes, "recomputation"),
             counted(r.pageouts, "page-out"), counted(r.pageins, "page-in"));
  // Under a budget a compute waits for the page-out whose RAM it needs; without one it does
  // not, and the same schedule peaks higher than it was made to.
  if (!o.ram_budget_bytes && r.pageouts > 0)
    fmt::print("note        no --ram-budget: computes did not wait for page-outs to free their RAM; give the budget "
               "the schedule was made for to see its peak under it\n");
}

void add_simulate_command(CLI::App& app) {
  struct Options {
    GraphSource source;
    ScheduleSource schedule;
    BudgetOptions budget;
    std::string plan_file;
    std::string accounting = "strict";
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "simulate", "Judge a schedule or plan: validity, peak RAM, energy, time (the one simulator every method uses)");
  opts->source.add_options(*cmd);
  opts->schedule.add_options(*cmd);
  opts->budget.add_options(*cmd);
  cmd->add_option("--plan", opts->plan_file, "Plan text file (one 'compute|pageout|pagein|free <node>' a line)")
      ->transform(input_file())
      ->excludes(cmd->get_option("--schedule"))
      ->excludes(cmd->get_option("--strategy"))
      ->excludes(cmd->get_option("--time-limit"));  // a plan file is run as it is: nothing solves
  cmd->add_option("--accounting", opts->accounting,
                  "strict (fixed memory counts) or reference (activations only, as 'solve --accounting reference' "
                  "judges its schedules)")
      ->capture_default_str()
      ->transform(one_of({"strict", "reference"}));
  cmd->add_flag("--json", opts->json, "Print the figures as JSON");
  cmd->callback([opts] {
    std::vector<NamedFile> inputs = opts->source.input_files();
    inputs.push_back({"--schedule", opts->schedule.schedule_file});
    inputs.push_back({"--plan", opts->plan_file});
    check_files_apart(inputs, {});
    const Graph g = opts->source.load();
    const GraphCosts costs = costs_for(g, resolve_device(opts->source.platform));
    SimulationOptions options = opts->budget.resolve(g, costs);
    if (opts->accounting == "reference") {
      // The reference's memory model charges a page-in from the stage after it starts,
      // which the simulator does not model: its budget is the MILP's to hold, not ours.
      if (opts->budget.ram_budget || opts->budget.count_gradients)
        throw InputError("--accounting reference counts activations only and holds no budget (as solve judges a "
                         "reference schedule); drop --ram-budget and --count-gradients, or use --accounting strict");
      options.count_parameters = false;
    }
    const Plan plan = opts->plan_file.empty() ? plan_from_schedule(opts->schedule.load(g, costs, options), g)
                                              : load_plan_text(opts->plan_file, g);
    // A plan file's own order is judged as it is (the simulator names its first instruction
    // over the budget); a schedule's error says what to change.
    const SimulationResult r = [&] {
      if (opts->plan_file.empty()) return simulate_for_budget(g, costs, plan, options);
      try {
        return simulate(g, costs, plan, options);
      } catch (const InvalidPlan& e) {
        throw InputError(fmt::format("plan '{}': {}", opts->plan_file, e.what()));
      }
    }();
    if (opts->plan_file.empty()) opts->schedule.require_fits(g, r, options);
    if (opts->json)
      fmt::print("{}\n", json_text(simulation_to_json(r, options), 2));
    else
      print_simulation(r, options);
  });
}

}  // namespace poet::cli
