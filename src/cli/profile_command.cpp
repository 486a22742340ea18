// `poet profile`: measure this machine for one training graph and write a device profile
// that `--platform FILE` then plans that graph with, node by node (docs/PROFILING.md).
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <unistd.h>

#include "commands.h"
#include "graph_source.h"
#include "poet/cost/device.h"
#include "poet/paging/file_pager.h"
#include "poet/profile/measure_device.h"
#include "poet/util/disk_room.h"
#include "poet/util/error.h"
#include "poet/util/exclusive_use.h"
#include "poet/util/interrupt.h"
#include "poet/util/units.h"

namespace poet::cli {

void add_profile_command(CLI::App& app) {
  struct Options {
    GraphSource source;
    profile::MeasureOptions measure;
    double cpu_power_w = 0, storage_power_w = -1;
    bool no_rapl = false;
    std::string output;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "profile", "Measure this machine's per-node compute and storage costs for a model; write a device profile");
  opts->source.model = kDefaultModel;
  auto* model_option =
      cmd->add_option("-m,--model", opts->source.model, "Zoo model (see 'poet models')")
          ->capture_default_str()
          ->type_name("MODEL");
  auto* graph_option =
      cmd->add_option("-g,--graph", opts->source.graph_file,
                      "Profile a training graph JSON file instead of a zoo model")
          ->transform(input_file());
  opts->source.add_onnx_option(*cmd, model_option, graph_option);
  auto* batch_option = cmd->add_option("-b,--batch-size", opts->source.batch_size, "Batch size for zoo and ONNX models")
                           ->capture_default_str()
                           ->check(number_in(1, kMaxBatchSize, true));
  // A graph file has its model and batch in it: these would be ignored.
  graph_option->excludes(model_option)->excludes(batch_option);
  cmd->add_option("--repeats", opts->measure.nodes.repeats, "Timed training steps (each node timed in each), timed transfers per storage size, and "
                  "timed pairs of a paging plan's step and checkpoint-all's (what paging costs a step)")
      ->capture_default_str()
      ->check(number_in(1, 100000, true));
  cmd->add_option("--warmup", opts->measure.nodes.warmup, "Untimed training steps before the timed ones")
      ->capture_default_str()
      ->check(number_in(1, 100000, true));
  cmd->add_option("--page-dir", opts->measure.storage.directory,
                  "Folder on the file system that paging will use (the page file goes here)")
      ->capture_default_str()
      ->check(existing_folder());
  cmd->add_flag("--no-direct-io", [opts](std::int64_t) { opts->measure.storage.direct_io = false; },
                "Go through the page cache instead of O_DIRECT (it is then dropped before each page-in)");
  cmd->add_option("--cpu-power", opts->cpu_power_w,
                  "CPU active power in W, for energy = time x power; needed where RAPL cannot be read")
      ->check(number_in(1e-6, 1e6));  // 0 would read as not given
  cmd->add_option("--storage-power", opts->storage_power_w, "Storage active power in W while paging (0: ignore)")
      ->required()
      ->check(number_in(0, 1e6));
  cmd->add_flag("--no-rapl", opts->no_rapl, "Derive energy from --cpu-power even where RAPL is readable");
  cmd->add_option("--name", opts->measure.name, "Profile name (default: <host>-<model>)");
  cmd->add_option("-o,--output", opts->output, "Device profile JSON to write (atomically)")
      ->required()
      ->transform(output_file());
  cmd->callback([opts] {
    profile::MeasureOptions measure = opts->measure;
    measure.storage.repeats = measure.nodes.repeats;
    if (opts->cpu_power_w != 0) measure.cpu_power_w = opts->cpu_power_w;
    measure.storage_power_w = opts->storage_power_w;
    measure.use_rapl = !opts->no_rapl;
    // Before the nodes' minutes of measuring, not after them, where the storage's turn comes.
    check_page_file_location(measure.storage.directory, "--page-dir");
    if (in_memory_file_system(measure.storage.directory))
      fmt::print(stderr, "poet: warning: --page-dir '{}' is on a file system kept in RAM (tmpfs): its storage "
                         "figures are memory's, not the device's storage's; give a folder on the storage the device "
                         "pages to\n",
                 measure.storage.directory.empty() ? "." : measure.storage.directory);
    check_files_apart(opts->source.input_files(), {{"--output", opts->output}});
    // Two profiles into one file would each run minutes for one to be replaced by the other.
    const ExclusiveUse one_profile_per_file(opts->output, "--output");
    const Graph g = opts->source.load();
    if (measure.name.empty()) {
      char host[256] = "host";
      ::gethostname(host, sizeof host - 1);
      measure.name = fmt::format("{}-{}", host, g.name());
    }
    set_interrupt_note(fmt::format("poet: interrupted while measuring; nothing was written to '{}' (a profile is "
                                   "written whole, at the end)",
                                   opts->output));
    const DeviceProfile profile =
        profile::measure_device(g, measure, [](std::string_view line) { fmt::print(stderr, "{}\n", line); });
    save_device(profile, opts->output);
    set_interrupt_note("");
    fmt::print("wrote {}: {} nodes of '{}', {} compute per step; plan with --platform {}\n", opts->output,
               profile.nodes->nodes.size(), g.name(), format_seconds(costs_for(g, profile).total_compute_time_s),
               opts->output);
  });
}

}  // namespace poet::cli
