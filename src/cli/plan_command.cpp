#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "graph_source.h"
#include "poet/plan/device_format.h"
#include "poet/plan/memory_plan.h"
#include "poet/plan/plan.h"
#include "poet/plan/transfer_planner.h"
#include "poet/util/atomic_file.h"
#include "poet/util/error.h"
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
    std::string device_plan;
    std::string c_header;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("plan", "Turn a schedule into an execution plan (Algorithm 2 + transfer planner)");
  opts->source.add_options(*cmd);
  opts->schedule.add_options(*cmd);
  opts->budget.add_options(*cmd);
  cmd->add_flag("--no-transfer-planner", opts->no_transfer_planner,
                "Keep paging where the schedule puts it instead of moving it to hide latency");
  cmd->add_option("-o,--output", opts->output, "Write the plan as text to this file instead of printing it");
  cmd->add_option("--save-schedule", opts->save_schedule, "Also write the schedule used as JSON");
  cmd->add_option("--device-plan", opts->device_plan,
                  "Also write the plan with its static arena offsets in the binary device format");
  cmd->add_option("--c-header", opts->c_header, "Also write the device plan as a C header for firmware");
  cmd->callback([opts] {
    const Graph g = opts->source.load();
    const GraphCosts costs = estimate_costs(g, resolve_device(opts->source.platform));
    const SimulationOptions options = opts->budget.resolve(g, costs);
    const Schedule schedule = opts->schedule.load(g);
    Plan plan = plan_from_schedule(schedule, g);
    if (!opts->no_transfer_planner) {
      const TransferPlanResult t = plan_transfers(g, costs, plan, options);
      plan = t.plan;
      fmt::print(stderr, "transfer planner: moved {} page-ins and {} page-outs; stall {} -> {}, makespan {} -> {}\n",
                 t.moved_pageins, t.moved_pageouts, format_seconds(t.stall_before_s), format_seconds(t.stall_after_s),
                 format_seconds(t.makespan_before_s), format_seconds(t.makespan_after_s));
    }
    if (!opts->save_schedule.empty()) save_schedule(schedule, opts->save_schedule);
    const SimulationResult r = simulate(g, costs, plan, options);
    const MemoryPlan memory = plan_memory_greedy(r.buffers);
    if (const auto overlap = find_overlap(r.buffers, memory))
      POET_CHECK(false, "static memory plan overlaps: " + *overlap);
    fmt::print(stderr, "static memory plan: arena {} for a live peak of {} (+{:.2f}% fragmentation)\n",
               format_bytes_exact(memory.arena_bytes), format_bytes_exact(memory.peak_live_bytes),
               100 * memory.fragmentation());
    if (!opts->device_plan.empty() || !opts->c_header.empty()) {
      const auto bytes = encode_device_plan(make_device_plan(plan, r.buffers, memory, g.size()));
      if (!opts->device_plan.empty()) save_device_plan(bytes, opts->device_plan);
      if (!opts->c_header.empty()) write_file_atomically(opts->c_header, device_plan_c_header(bytes, "poet_plan"));
      fmt::print(stderr, "device plan: {} bytes ({} instructions)\n", bytes.size(), plan.instructions.size());
    }
    if (opts->output.empty()) {
      fmt::print("{}", plan_to_text(plan, g));
    } else {
      save_plan_text(plan, g, opts->output);
      fmt::print("wrote {} ({} instructions)\n", opts->output, plan.instructions.size());
    }
  });
}

}  // namespace poet::cli
