#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "device_output.h"
#include "graph_source.h"
#include "poet/lower/lower.h"
#include "poet/simulate/simulator.h"
#include "poet/util/units.h"

namespace poet::cli {

void add_plan_command(CLI::App& app) {
  struct Options {
    GraphSource source;
    ScheduleSource schedule;
    BudgetOptions budget;
    bool no_transfer_planner = false;
    std::string output;
    std::string save_schedule;
    DeviceOutputs device;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("plan", "Turn a schedule into an execution plan (Algorithm 2 + transfer planner)");
  opts->source.add_options(*cmd);
  opts->schedule.add_options(*cmd);
  opts->budget.add_options(*cmd);
  cmd->add_flag("--no-transfer-planner", opts->no_transfer_planner,
                "Keep paging where the schedule puts it instead of moving it to hide latency");
  cmd->add_option("-o,--output", opts->output, "Write the plan as text to this file instead of printing it")
      ->transform(output_file());
  cmd->add_option("--save-schedule", opts->save_schedule, "Also write the schedule used as JSON")
      ->transform(output_file());
  opts->device.add_options(*cmd);
  cmd->callback([opts] {
    // A plan holds no fixed memory: gradients count only against a budget its schedule meets.
    if (opts->budget.count_gradients && !opts->budget.ram_budget)
      throw InputError("--count-gradients counts gradients and optimizer state against --ram-budget, which is not "
                       "given, and a plan holds no fixed memory; give --ram-budget too, or leave --count-gradients "
                       "out");
    std::vector<NamedFile> inputs = opts->source.input_files();
    inputs.push_back({"--schedule", opts->schedule.schedule_file});
    check_files_apart(inputs, {{"--output", opts->output},
                               {"--save-schedule", opts->save_schedule},
                               {"--device-plan", opts->device.device_plan},
                               {"--c-header", opts->device.c_header}});
    const Graph g = opts->source.load();
    const GraphCosts costs = costs_for(g, resolve_device(opts->source.platform));
    const SimulationOptions options = opts->budget.resolve(g, costs);
    const Schedule schedule = opts->schedule.load(g, costs, options);
    const ArenaFit fit = [&] {
      try {
        return lower_to_fit_arena(g, costs, schedule,
                                  {.simulation = options, .plan_transfers = !opts->no_transfer_planner},
                                  opts->schedule.replanner(g, costs, options), true);
      } catch (const InvalidPlan&) {
        // Over the budget, the error says by how much and what to change, not only the
        // first instruction over it.
        opts->schedule.require_fits(g, simulate_for_budget(g, costs, plan_from_schedule(schedule, g), options), options);
        throw;
      }
    }();
    const LoweredPlan& lowered = fit.lowered;
    const Plan& plan = lowered.plan;
    if (!opts->no_transfer_planner) {
      const TransferPlanResult& t = lowered.transfers;
      fmt::print(stderr, "transfer planner: moved {} and {}; stall {} -> {}, makespan {} -> {}\n",
                 counted(t.moved_pageins, "page-in"), counted(t.moved_pageouts, "page-out"),
                 format_seconds(t.stall_before_s), format_seconds(t.stall_after_s), format_seconds(t.makespan_before_s),
                 format_seconds(t.makespan_after_s));
    }
    // The files as one output: all written, or none (write_files_atomically).
    std::vector<FileContents> files = device_output_files(g, fit, opts->device, options.ram_budget_bytes);
    if (!opts->save_schedule.empty()) files.push_back({opts->save_schedule, schedule_file_text(fit.schedule, g)});
    if (!opts->output.empty()) files.push_back({opts->output, plan_to_text(plan, g)});
    write_files_atomically(files);
    if (opts->output.empty())
      fmt::print("{}", plan_to_text(plan, g));
    else
      fmt::print("wrote {} ({} instructions)\n", opts->output, plan.instructions.size());
  });
}

}  // namespace poet::cli
