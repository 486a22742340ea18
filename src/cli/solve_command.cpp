#include <fmt/format.h>

#include <cmath>
#include <csignal>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "device_output.h"
#include "graph_source.h"
#include "poet/lower/lower.h"
#include "poet/solve/solve.h"
#include "poet/util/error.h"
#include "poet/util/interrupt.h"
#include "poet/util/json_file.h"
#include "poet/util/units.h"

namespace poet::cli {

namespace {

struct SolveCliOptions {
  GraphSource source;
  std::string ram_budget = "100%";
  std::string runtime_budget;
  std::string mode = "poet";
  std::string accounting = "strict";
  std::string optimizer = "sgd";
  SolveOptions solve;
  std::string output;
  DeviceOutputs device;
  bool json = false;
};

struct Deadline {
  double schedule_s;     // what the schedule's makespan may take
  double update_s = 0;   // the optimizer's update, left out of a step's deadline
};

// "7.6" or "1.5x": a multiple of the compute-once time. "250ms" or "2s": a training step's
// time, which ends with the optimizer's update: a profile that timed it (`update_s`) leaves
// the schedule the rest.
Deadline parse_deadline(const std::string& text, double compute_once_s, double update_s) {
  const std::size_t unit_at = text.find_first_not_of("0123456789.eE+-");
  std::string unit = unit_at == std::string::npos ? "" : text.substr(unit_at);
  std::ranges::transform(unit, unit.begin(), [](unsigned char c) { return std::tolower(c); });  // 2X, 250MS
  const std::optional<double> value = parse_decimal(std::string_view(text).substr(0, unit_at));
  if (value && *value > 0 && *value <= 1e9) {
    if (unit.empty() || unit == "x") return {*value * compute_once_s};
    if (unit == "ms" || unit == "s") {
      const double step_s = unit == "ms" ? *value / 1000 : *value;
      if (step_s <= update_s)
        throw InputError(fmt::format("--runtime-budget: a step of {} leaves the schedule no time: the profile's optimizer "
                                     "update alone takes {}; give a longer deadline",
                                     format_seconds(step_s), format_seconds(update_s)));
      return {step_s - update_s, update_s};
    }
  }
  throw InputError(fmt::format("--runtime-budget: '{}' is not a deadline; write a multiple of the compute-once time "
                               "(1.5 or 1.5x) or a time (250ms, 2s), up to 1e9",
                               text_excerpt(text)));
}

// The wall clock of each part of the solve, in the order they run.
std::vector<std::pair<const char*, double>> solve_times(const SolveResult& r) {
  return {{"starts", r.starts_time_s}, {"search", r.search_time_s}, {"bound", r.bound_time_s},
          {"model", r.model_time_s},   {"cbc", r.cbc_time_s}};
}

nlohmann::json times_json(const SolveResult& r) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [part, seconds] : solve_times(r)) j[part] = seconds;
  j["total"] = r.solve_time_s;
  return j;
}

std::string stop_text(int signal_number, const SolveResult& r, double time_limit_s) {
  return fmt::format("by {} after {:.1f} s of the {:.0f} s limit: the best schedule and bound found by then",
                     signal_number == SIGTERM  ? "SIGTERM"
                     : signal_number == SIGHUP ? "SIGHUP (its terminal closed)"
                                               : "Ctrl-C",
                     r.solve_time_s, time_limit_s);
}

std::string times_text(const SolveResult& r) {
  std::string text;
  for (const auto& [part, seconds] : solve_times(r)) text += fmt::format("{} {:.2f} s, ", part, seconds);
  return text + fmt::format("total {:.2f} s", r.solve_time_s);
}

}  // namespace

void add_solve_command(CLI::App& app) {
  auto opts = std::make_shared<SolveCliOptions>();
  auto* cmd = app.add_subcommand("solve", "Find the energy-optimal remat + paging schedule (the POET MILP, on CBC)");
  opts->source.add_options(*cmd);
  cmd->add_option("--ram-budget", opts->ram_budget,
                  "RAM budget: bytes (3000000, 3MB, 2.5MiB), or 70%: fixed memory + 70% of the unconstrained activation peak")
      ->capture_default_str()
      ->type_name("BYTES|PERCENT");
  cmd->add_option("--runtime-budget", opts->runtime_budget,
                  "Deadline: a multiple of the compute-once time (1.5), or a training step's time (250ms), of which a "
                  "profile's optimizer update is left out; none if omitted")->type_name("MULTIPLE|TIME");
  cmd->add_option("--mode", opts->mode, "poet (remat + paging), remat, paging, or checkmate (remat, time objective)")
      ->capture_default_str()
      ->transform(one_of({"poet", "remat", "paging", "checkmate"}));
  cmd->add_option("--accounting", opts->accounting,
                  "strict (fixed memory, page-ins and paging time count) or reference (the reference's model)")
      ->capture_default_str()
      ->transform(one_of({"strict", "reference"}));
  cmd->add_flag("--count-gradients", opts->solve.count_gradients, "Strict: gradients and optimizer state are fixed memory");
  add_counted_optimizer_option(*cmd, opts->optimizer);
  cmd->add_option("--time-limit", opts->solve.time_limit_s,
                  "Wall-clock limit of the solve, seconds (Ctrl-C ends it sooner, with the best schedule so far)")
      ->capture_default_str()
      ->check(time_limit_seconds());
  cmd->add_option("--gap", opts->solve.relative_gap, "Relative gap at which a solution counts as optimal")
      ->capture_default_str()
      ->check(number_in(0, 1));
  cmd->add_option("--threads", opts->solve.threads, "CBC threads")->capture_default_str()->check(number_in(1, 64, true));
  cmd->add_option("--seed", opts->solve.seed, "CBC's random seed")
      ->capture_default_str()
      ->check(number_in(0, std::numeric_limits<int>::max(), true));
  cmd->add_option("--log-level", opts->solve.log_level, "CBC's own log (0: none)")
      ->capture_default_str()
      ->check(number_in(0, 63, true));  // CBC's own range for its log level
  cmd->add_option("-o,--output", opts->output, "Write the schedule as JSON")->transform(output_file());
  cmd->add_option("--write-model", opts->solve.write_model_path,
                  "Also write the MILP as MPS or LP (by extension) for another solver (Gurobi, HiGHS, SCIP)")
      ->type_name("FILE");
  cmd->add_option("--write-start", opts->solve.write_start_path,
                  "Also write poet's schedule as a solution of the --write-model model ('name value' lines): a MIP "
                  "start for that solver, and a file --solution reads back")->type_name("FILE")
      ->needs("--write-model");
  auto* heuristic = cmd->add_flag("--heuristic", opts->solve.heuristic_only,
                "Skip CBC and the window search: the best of the eviction heuristic, Capuchin and DTR, with the "
                "cheap lower bound (compute-once or covering): 0.1-22 s on the zoo (the most on resnet50 at 30%; "
                "docs/BENCHMARKS.md), where a full solve takes its whole time limit");
  cmd->add_option("--solution", opts->solve.solution_path,
                  "Instead of CBC, read another solver's solution (Gurobi .sol, HiGHS, SCIP) of the model "
                  "--write-model wrote with the same options")
      ->transform(existing_file())
      ->excludes(heuristic);
  // The heuristic builds no MILP: there is no model to write, nor a solution of one to read.
  heuristic->excludes("--write-model");
  opts->device.add_options(*cmd);
  cmd->add_flag("--json", opts->json, "Print the result as JSON");
  cmd->callback([opts] {
    std::vector<NamedFile> inputs = opts->source.input_files();
    inputs.push_back({"--solution", opts->solve.solution_path});
    check_files_apart(inputs, {{"--output", opts->output},
                               {"--write-model", opts->solve.write_model_path},
                               {"--write-start", opts->solve.write_start_path},
                               {"--device-plan", opts->device.device_plan},
                               {"--c-header", opts->device.c_header}});
    const Graph g = opts->source.load();
    const DeviceProfile device = resolve_device(opts->source.platform);
    const GraphCosts costs = costs_for(g, device);
    SolveOptions o = opts->solve;
    o.accounting = opts->accounting == "reference" ? Accounting::Reference : Accounting::Strict;
    if (o.accounting == Accounting::Reference && o.count_gradients)
      throw InputError("--count-gradients counts fixed memory, which --accounting reference leaves out (it counts "
                       "activations only); drop one of the two");
    o.optimizer = optimizer_named(opts->optimizer);
    o.mode = opts->mode == "paging" ? SolveMode::PagingOnly
             : opts->mode == "remat" || opts->mode == "checkmate" ? SolveMode::RematOnly
                                                                  : SolveMode::RematAndPaging;
    o.objective = opts->mode == "checkmate" ? SolveObjective::Time : SolveObjective::Energy;
    const SimulationOptions counting = o.counting();
    o.ram_budget_bytes = parse_ram_budget(opts->ram_budget, budget_scale(g, costs, counting));
    std::optional<Deadline> deadline;
    if (!opts->runtime_budget.empty()) {
      deadline = parse_deadline(opts->runtime_budget, costs.total_compute_time_s, device.optimizer_update_s());
      o.deadline_s = deadline->schedule_s;
    }
    o.progress = !opts->json;

    // Ctrl-C ends a long solve with what it has found, as MILP solvers do; twice, at once.
    SolveResult r;
    int stop_signal = 0;
    {
      const StopOnInterrupt interrupt("poet: stopping: the solve answers with its best schedule so far (interrupt "
                                      "again, Ctrl-C or a signal, to quit without it)");
      o.stop = &interrupt.requested();
      r = solve(g, costs, o);
      stop_signal = r.stopped ? interrupt.signal_number() : 0;
    }
    // The budget the simulator holds a schedule to: strict accounting's (the reference's is its MILP's).
    SimulationOptions judged = counting;
    if (o.accounting == Accounting::Strict) judged.ram_budget_bytes = o.ram_budget_bytes;
    std::vector<FileContents> files;  // one output: all written, or none
    if (r.simulation && opts->device.wanted())
      files = device_output_files(g, lower_to_fit_arena(g, costs, *r.schedule, {.simulation = judged}, {}),
                                  opts->device, judged.ram_budget_bytes);
    if (r.schedule && !opts->output.empty()) files.push_back({opts->output, schedule_file_text(*r.schedule, g)});
    write_files_atomically(files);
    if (opts->json) {
      nlohmann::json j = {{"status", solve_status_name(r.status)},
                          {"ram_budget_bytes", o.ram_budget_bytes},
                          {"deadline_s", o.deadline_s ? nlohmann::json(*o.deadline_s) : nlohmann::json(nullptr)},
                          {"deadline_update_s", deadline ? nlohmann::json(deadline->update_s) : nlohmann::json(nullptr)},
                          // No schedule: no objective or gap; proven infeasible: no bound either.
                          {"objective", r.simulation ? nlohmann::json(r.objective) : nlohmann::json(nullptr)},
                          {"best_bound", r.status == SolveStatus::Infeasible ? nlohmann::json(nullptr)
                                                                             : nlohmann::json(r.best_bound)},
                          {"bound_source", r.status == SolveStatus::Infeasible
                                               ? nlohmann::json(nullptr)
                                               : nlohmann::json(bound_source_name(r.bound_source))},
                          {"gap", r.simulation ? nlohmann::json(r.gap) : nlohmann::json(nullptr)},
                          {"solve_time_s", r.solve_time_s},
                          {"times_s", times_json(r)},
                          {"windows_solved", r.windows_solved},
                          {"windows_improved", r.windows_improved},
                          {"nodes", r.nodes},
                          {"variables", r.variables},
                          {"constraints", r.constraints},
                          {"message", r.message},
                          {"stopped", r.stopped}};
      if (r.smallest_feasible_budget) j["smallest_feasible_budget_bytes"] = *r.smallest_feasible_budget;
      if (r.simulation) j["simulation"] = simulation_to_json(*r.simulation, judged);
      fmt::print("{}\n", json_text(j, 2));
    } else if (r.simulation) {
      const auto& s = *r.simulation;
      // "Optimal" as MILP solvers say it: within --gap, which by default is 0.01%; a larger
      // gap asked for is named, not called optimal.
      const std::string found =
          r.status != SolveStatus::Optimal ? "found a feasible (not proven optimal) schedule"
          : r.gap <= 1e-4                  ? "found an optimal schedule"
                           : fmt::format("found a schedule proven within {:.3f}% of optimal (as --gap asked)", 100 * r.gap);
      fmt::print("POET {} with a memory budget of {} that consumes {:.5f} J of CPU energy and {:.5f} J of "
                 "paging energy ({} total)\n",
                 found,
                 format_bytes_exact(o.ram_budget_bytes), s.compute_energy_j, s.paging_energy_j(),
                 format_joules(s.total_energy_j()));
      // The bound is of the objective: energy, or with --mode checkmate the step's compute time.
      const std::string bound =
          fmt::format("{:.6g} {}", r.best_bound, o.objective == SolveObjective::Time ? "s of compute" : "J");
      const std::string status = r.status == SolveStatus::Optimal && r.gap > 1e-4
                                     ? fmt::format("optimal within --gap {:g}%", 100 * o.relative_gap)
                                     : std::string(solve_status_name(r.status));
      fmt::print("status      {} (gap {:.3f}%, bound {}) in {:.2f} s; {}\n", status, 100 * r.gap,
                 bound, r.solve_time_s,
                 r.variables == 0    ? std::string("eviction heuristic, no MILP")
                 : r.constraints == 0
                     ? fmt::format("the whole MILP ({} variables) not built", format_grouped(r.variables))
                     : fmt::format("{} nodes; {} variables, {} constraints", format_grouped(r.nodes),
                                   format_grouped(r.variables), format_grouped(r.constraints)));
      fmt::print("schedule    {}, {}, {}; peak RAM {}; makespan {} ({} stalled)\n",
                 counted(s.recomputes, "recomputation"), counted(s.pageouts, "page-out"), counted(s.pageins, "page-in"),
                 format_bytes_exact(s.peak_bytes), format_seconds(s.makespan_s), format_seconds(s.stall_s));
      if (o.accounting == Accounting::Reference && s.peak_bytes > o.ram_budget_bytes)
        fmt::print("memory      the peak is over the budget: --accounting reference holds the budget as the "
                   "reference's MILP counts memory (activations only, a page-in from the stage after it starts), not "
                   "as the simulator does; for a schedule whose peak fits, use --accounting strict\n");
      if (deadline && o.accounting == Accounting::Reference && s.makespan_s > deadline->schedule_s)
        fmt::print("deadline    {}, which the makespan is over: --accounting reference holds the deadline as the "
                   "reference's MILP does (compute time only), not as the simulator times the step (with its stalls "
                   "and transfers); for a schedule whose makespan fits, use --accounting strict\n",
                   format_seconds(deadline->schedule_s));
      else if (deadline && deadline->update_s > 0)
        fmt::print("deadline    makespan within {}: a step of {} less the profile's optimizer update, {}\n",
                   format_seconds(deadline->schedule_s), format_seconds(deadline->schedule_s + deadline->update_s),
                   format_seconds(deadline->update_s));
      else if (deadline)
        fmt::print("deadline    makespan within {}\n", format_seconds(deadline->schedule_s));
      fmt::print("bound       {} from {}; time {}\n", bound, bound_source_name(r.bound_source), times_text(r));
      if (r.windows_solved > 0)
        fmt::print("search      {} windows solved, {} improved the schedule\n", r.windows_solved, r.windows_improved);
      if (!r.message.empty()) fmt::print("note        {}\n", r.message);
      if (r.stopped) fmt::print("stopped     {}\n", stop_text(stop_signal, r, o.time_limit_s));
      std::vector<std::string_view> written;
      for (const FileContents& f : files)
        if (!f.path.starts_with("/dev/")) written.push_back(f.path);  // not stdout (it holds the file), nor /dev/null
      if (!written.empty()) fmt::print("wrote       {}\n", fmt::join(written, ", "));
    } else {
      fmt::print("POET found no schedule: {}\n", r.message);
      fmt::print("status      {} after {:.2f} s; {} variables, {} constraints\n", solve_status_name(r.status),
                 r.solve_time_s, format_grouped(r.variables), format_grouped(r.constraints));
      if (r.stopped) fmt::print("stopped     {}\n", stop_text(stop_signal, r, o.time_limit_s));
      // A file of an earlier run under the same name is as it was: say so, lest it be taken for this one.
      std::vector<std::string> unwritten;
      for (const std::string* file : {&opts->output, &opts->device.device_plan, &opts->device.c_header})
        if (!file->empty()) unwritten.push_back(*file);
      if (!unwritten.empty())
        fmt::print("files       not written, with no schedule: '{}'\n", fmt::join(unwritten, "', '"));
    }
    // Stopped, the answer is written but the solve did not run its course: the exit code a
    // shell gives the signal, so that scripts do not take it for a finished solve.
    if (r.stopped) throw ExitWith{128 + stop_signal};
    if (!r.simulation) throw ExitWith{kExitNoSchedule};
  });
}

}  // namespace poet::cli
