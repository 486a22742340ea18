#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "commands.h"
#include "graph_source.h"
#include "poet/plan/plan.h"
#include "poet/report/svg.h"
#include "poet/util/atomic_file.h"
#include "poet/util/units.h"

namespace poet::cli {

void add_show_command(CLI::App& app) {
  struct Options {
    GraphSource source;
    ScheduleSource schedule;
    BudgetOptions budget;
    std::string prefix = "poet";
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "show", "Draw a schedule (the paper's Figure 2) and its memory timeline against the budget, as SVG");
  opts->source.add_options(*cmd);
  opts->schedule.add_options(*cmd);
  opts->budget.add_options(*cmd);
  cmd->add_option("-o,--output", opts->prefix,
                  "Output prefix: writes PREFIX.schedule.svg and PREFIX.memory.svg (a trailing .svg, .schedule.svg "
                  "or .memory.svg is dropped; a folder writes FOLDER/poet.*.svg)")
      ->capture_default_str()
      // `-o figure.svg` means the figure files, not figure.svg.schedule.svg, and `-o figures/`
      // the files in that folder, not the hidden figures/.schedule.svg; both settled before the
      // check, so that it checks the files written.
      ->transform([](std::string prefix) {
        if (prefix.ends_with('/') || std::filesystem::is_directory(prefix))
          return (std::filesystem::path(prefix) / "poet").string();
        // One of the two files' names (`-o d/lin.schedule.svg` made lin.schedule.schedule.svg).
        for (const std::string_view suffix : {".schedule.svg", ".memory.svg", ".svg"})
          if (prefix.size() > suffix.size() && prefix.ends_with(suffix)) {
            prefix.resize(prefix.size() - suffix.size());
            break;
          }
        return prefix;
      })
      // Both files, before anything is drawn: not one written and the other refused.
      ->check(output_file(".schedule.svg"))
      ->check(output_file(".memory.svg"));
  cmd->callback([opts] {
    std::vector<NamedFile> inputs = opts->source.input_files();
    inputs.push_back({"--schedule", opts->schedule.schedule_file});
    check_files_apart(inputs, {{"--output", opts->prefix + ".schedule.svg"}, {"--output", opts->prefix + ".memory.svg"}});
    const Graph g = opts->source.load();
    const GraphCosts costs = costs_for(g, resolve_device(opts->source.platform));
    const SimulationOptions options = opts->budget.resolve(g, costs);
    const Schedule s = opts->schedule.load(g, costs, options);
    // Drawn even when over budget: that is when the picture is most useful.
    const SimulationResult r = simulate_for_budget(g, costs, plan_from_schedule(s, g), options);
    if (options.ram_budget_bytes && r.peak_bytes > *options.ram_budget_bytes)
      fmt::print(stderr, "warning: this schedule needs {}, over the budget of {}\n", format_bytes_exact(r.peak_bytes),
                 format_bytes_exact(*options.ram_budget_bytes));
    const std::string schedule_file = opts->prefix + ".schedule.svg";
    const std::string memory_file = opts->prefix + ".memory.svg";
    write_files_atomically(std::vector<FileContents>{{schedule_file, schedule_svg(g, s)},
                                                     {memory_file, memory_svg(g, r, options.ram_budget_bytes)}});
    fmt::print("wrote {} and {}\n", schedule_file, memory_file);
  });
}

}  // namespace poet::cli
