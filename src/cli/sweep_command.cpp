#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.h"
#include "graph_source.h"
#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/sweep/sweep.h"
#include "poet/sweep/sweep_progress.h"
#include "poet/sweep/sweep_range.h"
#include "poet/util/atomic_file.h"
#include "poet/util/exclusive_use.h"
#include "poet/util/error.h"
#include "poet/util/interrupt.h"
#include "poet/util/json_file.h"
#include "poet/util/units.h"

namespace poet::cli {
namespace {

struct SweepCliOptions {
  GraphSource source;
  std::string methods = "all";
  std::string budgets = "30%:100%:10%";
  std::string runtime_budget;
  std::string ablation_budget = "50%";
  std::string ablation_deadlines;
  std::string output_dir;
  SweepSettings settings;
  bool json = false;
  bool resume = false;
};

// The rows an interrupted sweep saved in `progress_file`, if it is to be continued. A
// progress file is never overwritten by a sweep that does not continue it.
SweepRowsSoFar rows_to_resume(const std::string& progress_file, bool resume, const SweepIdentity& identity,
                              const std::vector<SweepTask>& tasks) {
  const bool exists = std::filesystem::exists(progress_file);
  if (!resume) {
    if (exists)
      throw InputError(fmt::format("'{}' holds the finished tasks of an interrupted sweep: continue it with --resume, "
                                   "or remove the file to start afresh",
                                   progress_file));
    return SweepRowsSoFar(tasks.size());
  }
  if (!exists) {
    fmt::print(stderr, "sweep: nothing to resume ('{}' does not exist): running every task\n", progress_file);
    return SweepRowsSoFar(tasks.size());
  }
  nlohmann::json progress;
  try {
    progress = read_json_file(progress_file, "sweep progress");
  } catch (const InputError& e) {  // cut short by a full disk, or edited
    throw InputError(fmt::format("{}; remove it to start afresh (its tasks run again)", e.what()));
  }
  SweepRowsSoFar rows = sweep_rows_to_resume(progress, progress_file, identity, tasks);
  fmt::print(stderr, "sweep: resuming with {} of {} tasks done (from '{}')\n", rows_finished(rows), tasks.size(),
             progress_file);
  return rows;
}

// What the progress file holds, for a message on a sweep that stops early.
std::string saved_tasks(const SweepRowsSoFar& rows, const std::string& progress_file) {
  const std::size_t done = rows_finished(rows);
  if (done == 0) return "no task had finished; nothing was saved";
  return fmt::format("{} of {} tasks are saved in '{}': continue with the same command and --resume", done,
                     rows.size(), progress_file);
}

std::string interrupted_note(const SweepRowsSoFar& rows, const std::string& progress_file) {
  return "poet: sweep interrupted; " + saved_tasks(rows, progress_file);
}

nlohmann::json rows_json(const std::vector<SweepRow>& rows) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& r : rows) all.push_back(sweep_row_to_json(r));
  return all;
}

// Every file a sweep writes in its folder.
constexpr std::array<std::string_view, 8> kSweepFiles{"sweep.partial.json",   "sweep.json",      "sweep.csv",
                                                      "energy_vs_budget.svg", "poet_vs_capuchin.svg", "poet_vs_pofo.md",
                                                      "overhead.md",          "ablation.svg"};

struct SweepFiles {
  std::string summary;              // the overhead table, as overhead.md holds it
  std::vector<std::string> written;  // the names of the files written, in kSweepFiles' order
  std::vector<std::string> removed;  // an earlier sweep's figures this one does not draw
  std::vector<std::string> kept;     // files of those names a sweep did not write: left alone
};

// The first line of `text`, or of the file `path` (empty if it cannot be read).
std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }
std::string first_line_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  std::getline(in, line);
  return line;
}

// The sweep's files in `dir` (the first memory_tasks rows are the budgets', the rest the
// ablation's). A figure that compares methods is drawn only when both ran, and the
// ablation's only with its rows; a file of that name left in the folder by an earlier sweep
// would be taken for this one's, so it goes, if it begins as this sweep would have written
// it: a file of the user's that only shares its name is kept, and named.
SweepFiles write_sweep_files(const std::string& dir, const Graph& g, const GraphCosts& costs, const SweepCliOptions& o,
                             const std::vector<std::string>& methods, const std::vector<SweepRow>& rows,
                             std::size_t memory_tasks) {
  const std::vector<SweepRow> memory_rows(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(memory_tasks));
  const std::vector<SweepRow> ablation_rows(rows.begin() + static_cast<std::ptrdiff_t>(memory_tasks), rows.end());
  const SimulationOptions counting;  // the parameters count against every budget
  const double reference = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g), counting).total_energy_j();
  const std::string name = fmt::format("{} on {}", g.name(), o.source.platform);
  const auto ran = [&](const char* method) { return std::ranges::find(methods, method) != methods.end(); };
  SweepFiles out;
  const auto write = [&](const char* file, bool wanted, const auto& text) {
    const std::string path = dir + "/" + file;
    if (!wanted) {
      if (!std::filesystem::exists(path)) return;
      const bool a_sweeps = first_line_of_file(path) == first_line(text());
      if (a_sweeps) std::filesystem::remove(path);
      (a_sweeps ? out.removed : out.kept).emplace_back(file);
      return;
    }
    write_file_atomically(path, text());
    out.written.emplace_back(file);
  };
  write("sweep.json", true, [&] { return json_text(rows_json(rows), 2) + "\n"; });
  write("sweep.csv", true, [&] { return sweep_csv(rows); });
  write("energy_vs_budget.svg", true,
        [&] { return energy_overhead_svg(memory_rows, reference, name + ": energy overhead against RAM budget"); });
  write("poet_vs_capuchin.svg", ran("poet") && ran("capuchin"),
        [&] { return poet_vs_capuchin_svg(memory_rows, reference, name + ": POET against Capuchin"); });
  write("poet_vs_pofo.md", ran("poet") && ran("pofo"), [&] { return poet_vs_pofo_table(memory_rows); });
  out.summary = fmt::format("Energy overhead over checkpoint-all ({}) by RAM budget; '-': no schedule; 'error': the "
                            "task failed (why: sweep.csv); POET's proven gap in brackets.\n\n{}",
                            format_joules(reference), overhead_table(memory_rows, methods, reference));
  write("overhead.md", true, [&] { return out.summary; });
  write("ablation.svg", !ablation_rows.empty(), [&] {
    return ablation_svg(ablation_rows, reference, fmt::format("{}: remat, paging and both at {}", name, o.ablation_budget));
  });
  return out;
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto opts = std::make_shared<SweepCliOptions>();
  auto* cmd = app.add_subcommand("sweep", "Run every method at every budget and draw the paper's figures");
  opts->source.add_options(*cmd);
  cmd->add_option("--methods", opts->methods,
                  "'all' or a comma-separated list of: checkpoint_all, chen_sqrt, chen_greedy, revolve, dtr, capuchin, "
                  "pofo, checkmate, poet_remat, poet_paging, poet")->type_name("LIST")
      ->capture_default_str();
  cmd->add_option("--budgets", opts->budgets,
                  "RAM budgets in % of the checkpoint-all activation peak (on top of the parameters): first:last:step "
                  "or a list")->type_name("RANGE")
      ->capture_default_str();
  cmd->add_option("--runtime-budget", opts->runtime_budget,
                  "Deadline for every method, a multiple of the compute-once time (none if omitted)")
      ->type_name("MULTIPLE");
  cmd->add_option("--ablation-deadlines", opts->ablation_deadlines,
                  "Also run POET, remat only and paging only over these deadlines (e.g. 1:2:0.1) for the ablation "
                  "figure")->type_name("RANGE");
  cmd->add_option("--ablation-budget", opts->ablation_budget, "RAM budget of the ablation, in %")
      ->type_name("PERCENT")
      ->capture_default_str();
  cmd->add_option("--jobs,-j", opts->settings.jobs, "Methods run at once, each in its own process")
      ->capture_default_str()
      ->check(number_in(1, 64, true));
  cmd->add_option("--time-limit", opts->settings.time_limit_s, "Wall-clock limit of each POET or Checkmate solve, seconds")
      ->capture_default_str()
      ->check(time_limit_seconds());
  cmd->add_option("--gap", opts->settings.relative_gap,
                  "Proven relative gap at which a POET or Checkmate solve stops (e.g. 0.01: within 1% of optimal)")
      ->capture_default_str()
      ->check(number_in(0, 1));
  cmd->add_option("-o,--output-dir", opts->output_dir,
                  "Folder for sweep.csv, sweep.json and the figures (default: sweep-<graph>-<device>, by their names)")
      ->check(output_folder());
  cmd->add_flag("--json", opts->json, "Print the rows as JSON instead of the summary table");
  cmd->add_flag("--resume", opts->resume,
                "Continue an interrupted sweep: run only the tasks its progress file (OUTPUT-DIR/sweep.partial.json, "
                "saved after each task) does not hold");
  cmd->callback([opts] {
    const Graph g = opts->source.load();
    const DeviceProfile device = resolve_device(opts->source.platform);
    const GraphCosts costs = costs_for(g, device);
    const std::vector<std::string> methods = parse_sweep_methods(opts->methods);
    // "1.5x" as solve takes it: a multiple of the compute-once time.
    std::string multiple = opts->runtime_budget;
    if (multiple.ends_with('x') || multiple.ends_with('X')) multiple.pop_back();
    const double deadline = opts->runtime_budget.empty() ? 0 : parse_one_value(multiple, "--runtime-budget", "");
    const SimulationOptions counting;  // the parameters count against every budget
    const BudgetScale scale = budget_scale(g, costs, counting);
    const auto bytes_for = [&](double percent) { return scale.bytes_at(percent); };

    std::vector<SweepTask> tasks;
    for (const double percent : parse_range(opts->budgets, "--budgets", "%"))
      for (const auto& m : methods) tasks.push_back({m, percent, bytes_for(percent), deadline});
    const std::size_t memory_tasks = tasks.size();
    if (!opts->ablation_deadlines.empty()) {
      const double percent = parse_one_value(opts->ablation_budget, "--ablation-budget", "%");
      for (const double d : parse_range(opts->ablation_deadlines, "--ablation-deadlines", ""))
        for (const char* m : {"poet_remat", "poet_paging", "poet"}) tasks.push_back({m, percent, bytes_for(percent), d});
    }
    // By the graph's and the device's names, not the paths of their files: `-p ../dev.json`
    // made a folder "sweep-linear-.." holding "dev.json/", and every --graph file shared one.
    const auto part = [](std::string name) {
      std::ranges::replace_if(name, [](char c) { return c == '/' || c == '\\' || c == ' '; }, '_');
      return name;
    };
    const std::string dir =
        opts->output_dir.empty() ? fmt::format("sweep-{}-{}", part(g.name()), part(device.name)) : opts->output_dir;
    std::vector<NamedFile> outputs;
    for (const std::string_view name : kSweepFiles)
      outputs.push_back({"--output-dir", (std::filesystem::path(dir) / name).string()});
    check_files_apart(opts->source.input_files(), outputs);
    const auto made_folder = make_output_folder(dir, "--output-dir");
    const ExclusiveUse one_sweep_per_folder(dir, "--output-dir", kSweepFiles);  // before reading its progress
    const std::string progress_file = dir + "/sweep.partial.json";
    const SweepIdentity identity{fmt::format("{}, {} nodes, activation peak {} B", g.name(), g.size(),
                                             scale.activation_peak_bytes),
                                 opts->source.platform, opts->settings.time_limit_s, opts->settings.relative_gap,
                                 fmt::format("{:08x}", costs_checksum(g, costs))};
    const SweepRowsSoFar finished = rows_to_resume(progress_file, opts->resume, identity, tasks);
    fmt::print(stderr,
               "sweep: {} ({} x budgets{}), {} at a time, up to {:.0f} s per solve, stopping at a "
               "{:.2g}% gap\n",
               counted(tasks.size(), "task"), counted(methods.size(), "method"), memory_tasks < tasks.size() ? " + ablation" : "", opts->settings.jobs,
               opts->settings.time_limit_s, 100 * opts->settings.relative_gap);
    // Each solve's limit is wall-clock time: solves sharing a core get less work done in it.
    if (const unsigned cores = std::thread::hardware_concurrency();
        cores > 0 && static_cast<unsigned>(opts->settings.jobs) > cores)
      fmt::print(stderr,
                 "note: --jobs {} runs more tasks at once than this machine's {} cores: each solve gets a share of a "
                 "core within its {:.0f} s limit and may end with a larger gap than alone; --jobs {} keeps them "
                 "apart\n",
                 opts->settings.jobs, cores, opts->settings.time_limit_s, cores);

    // A write that fails (a full disk) keeps the last progress file whole: say what it holds.
    SweepRowsSoFar saved = finished;
    set_interrupt_note(interrupted_note(saved, progress_file));
    const auto save_progress = [&](const SweepRowsSoFar& so_far) {
      const std::string text = json_text(sweep_progress_to_json(identity, so_far)) + "\n";
      const DeferInterrupts file_and_note_together;
      write_file_atomically(progress_file, text);
      saved = so_far;
      set_interrupt_note(interrupted_note(saved, progress_file));
    };
    const auto [rows, files] = extending_errors(
        [&] {
          std::vector<SweepRow> all = run_sweep(g, costs, tasks, opts->settings, finished, save_progress);
          SweepFiles written = write_sweep_files(dir, g, costs, *opts, methods, all, memory_tasks);
          return std::pair{std::move(all), std::move(written)};
        },
        [&](const std::string& what) { return fmt::format("{}; {}", what, saved_tasks(saved, progress_file)); });
    // Every output is written: the progress has served.
    set_interrupt_note("");
    std::filesystem::remove(progress_file);
    if (opts->json) {
      fmt::print("{}\n", json_text(rows_json(rows), 2));
    } else {
      fmt::print("{}", files.summary);
      fmt::print("wrote {}/{}\n", dir, fmt::join(files.written, ", "));
    }
    if (!files.removed.empty())
      fmt::print(stderr, "poet: note: in '{}', removed {}: an earlier sweep's, which this one does not draw\n", dir,
                 fmt::join(files.removed, ", "));
    if (!files.kept.empty())
      fmt::print(stderr, "poet: note: in '{}', left {} as it was: not written by a sweep, nor by this one\n", dir,
                 fmt::join(files.kept, ", "));
    // The files hold every row; a script must still learn that some are failures, not figures.
    const auto failed = std::ranges::count_if(rows, [](const SweepRow& r) { return r.status == "error"; });
    for (const SweepRow& r : rows)
      if (r.status == "error")
        fmt::print(stderr, "poet: error: {}: {}\n", task_label(r.task), r.reason);
    if (failed > 0) {
      fmt::print(stderr, "poet: {} of {} tasks failed; the other rows are written\n", failed, rows.size());
      throw ExitWith{kExitFailure};
    }
  });
}

}  // namespace poet::cli
