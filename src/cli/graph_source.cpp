#include "graph_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <optional>

#include "commands.h"
#include "poet/util/interrupt.h"
#include "poet/backward/backward.h"
#include "poet/cost/device.h"
#include "poet/graph/graph_json.h"
#include "poet/onnx/onnx_import.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/strategy/strategy.h"
#include "poet/util/atomic_file.h"
#include "poet/util/error.h"
#include "poet/util/input_file.h"
#include "poet/util/nearest_name.h"
#include "poet/util/units.h"

namespace poet::cli {

CLI::Validator number_in(double lo, double hi, bool whole) {
  // Whole bounds in digits, thousands marked: "0 to 10,000,000,000,000,000,000", where {} wrote "1e+19".
  const auto bound = [whole](double x) {
    return whole && std::fabs(x) < 1.8e19 ? format_grouped(x) : fmt::format("{}", x);
  };
  const std::string range = fmt::format("{} from {} to {}", whole ? "a whole number" : "a number", bound(lo), bound(hi));
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<double> v = parse_decimal(text);
        if (v && *v >= lo && *v <= hi && (!whole || *v == std::floor(*v))) return {};
        return fmt::format("'{}' is not {}", text_excerpt(text), range);
      },
      range);
}

CLI::Validator one_of(std::vector<std::string> names) {
  return CLI::Validator(
      [names](std::string& text) -> std::string {
        text = std::string(trim_spaces(text));
        if (std::ranges::find(names, text) != names.end()) return {};
        const auto nearest = nearest_name(text, names);
        return fmt::format("'{}' is not one of {}{}", text_excerpt(text), fmt::join(names, ", "),
                           nearest ? fmt::format(" (did you mean '{}'?)", *nearest) : "");
      },
      fmt::format("{}", fmt::join(names, "|")));
}

namespace {

void dash_to(std::string& path, const char* stream) {
  if (path == "-") path = stream;
}

// The files output options named in this run, for give_stdout_to_its_file.
std::vector<std::string>& named_outputs() {
  static std::vector<std::string> paths;
  return paths;
}

}  // namespace

CLI::Validator input_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        dash_to(path, "/dev/stdin");
        return {};
      },
      "FILE");
}

CLI::Validator platform_name_or_file() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        dash_to(value, "/dev/stdin");
        // A built-in name wins over a file of that name in the working folder: say so, lest
        // the user think their profile was read.
        std::error_code error;
        if (platform_file(value).empty() && std::filesystem::is_regular_file(value, error))
          fmt::print(stderr,
                     "poet: note: --platform {} is the built-in platform; the file '{}' here is not read (give ./{} "
                     "for it)\n",
                     value, value, value);
        return {};
      },
      "PLATFORM|FILE");
}

CLI::Validator existing_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        dash_to(path, "/dev/stdin");
        std::error_code ec;
        const std::filesystem::file_status status = std::filesystem::status(path, ec);
        if (ec && ec != std::errc::no_such_file_or_directory)
          return fmt::format("'{}': {}", path, unreadable_path_text(ec));
        if (!std::filesystem::exists(status)) return fmt::format("'{}' does not exist; check the path", path);
        if (std::filesystem::is_directory(status)) return fmt::format("'{}' is a folder; give the path of a file", path);
        return {};
      },
      "FILE");
}

CLI::Validator existing_folder() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        std::error_code ec;
        const std::filesystem::file_status status = std::filesystem::status(path, ec);
        if (ec || !std::filesystem::exists(status))
          return fmt::format("the folder '{}' does not exist; create it or choose another", path);
        if (!std::filesystem::is_directory(status)) return fmt::format("'{}' is not a folder", path);
        return {};
      },
      "FOLDER");
}

CLI::Validator output_folder() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        if (path.empty()) return "an empty path; give a folder's name";
        if (path == "-") return "'-' (stdout) is no folder; give a folder's name";
        return {};
      },
      "FOLDER");
}

CLI::Validator output_file(std::string suffix) {
  return CLI::Validator(
      [suffix](std::string& path) -> std::string {
        // An empty path (an unset shell variable) is no file: not "none", not the folder.
        if (path.empty()) return "an empty path; give a file name";
        // `graph --json -m lenet5`: the option's file was forgotten and the next option taken.
        if (path.size() > 1 && path.starts_with('-'))
          return fmt::format("'{}' is an option, not a file name: give the file (or - for stdout) right after the "
                             "option (a file whose name begins with '-' is ./{})",
                             text_excerpt(path), text_excerpt(path));
        const std::string given = path;
        dash_to(path, "/dev/stdout");
        if (suffix.empty()) named_outputs().push_back(path);
        if (!suffix.empty() && written_in_place(path))
          return fmt::format("'{}' is {}, and this option names files by adding to it ('{}'); give a path such as "
                             "out/poet",
                             given, given == "-" ? "stdout" : "a stream or device", given + suffix);
        return output_path_problem(path + suffix).value_or("");
      },
      "FILE");
}

void give_stdout_to_its_file() {
  for (const std::string& path : named_outputs()) give_stdout_to(path);
}

void GraphSource::add_options(CLI::App& cmd) {
  model = kDefaultModel;
  platform = kDefaultPlatform;
  auto* model_option = cmd.add_option("-m,--model", model, "Zoo model (see 'poet models')")
                           ->capture_default_str()
                           ->type_name("MODEL");
  auto* graph_option =
      cmd.add_option("-g,--graph", graph_file, "Load a training graph JSON file instead of a zoo model")
          ->transform(input_file());
  add_onnx_option(cmd, model_option, graph_option);
  cmd.add_option("-p,--platform", platform, "Built-in platform (see 'poet platforms') or a device JSON file")
      ->capture_default_str()
      ->transform(platform_name_or_file());
  auto* batch_option = cmd.add_option("-b,--batch-size", batch_size, "Batch size for zoo and ONNX models")
                           ->capture_default_str()
                           ->check(number_in(1, kMaxBatchSize, true));
  auto* backward_option =
      cmd.add_option("--backward", backward,
                     "Backward construction: autodiff (the real backward graph) or chain (the reference's)")
          ->capture_default_str()
          ->transform(one_of({"autodiff", "chain"}));
  // A graph file has its model, batch and backward in it: these would be ignored.
  for (CLI::Option* made_by_the_file : {model_option, batch_option, backward_option})
    graph_option->excludes(made_by_the_file);
}

void GraphSource::add_onnx_option(CLI::App& cmd, CLI::Option* model_option, CLI::Option* graph_option) {
  auto* onnx = cmd.add_option("--onnx", onnx_file,
                              "Import an ONNX model (torch.onnx.export; docs/ONNX.md) instead of a zoo model, "
                              "with --batch-size as its batch")
                   ->transform(input_file());
  onnx->excludes(model_option);
  if (graph_option) onnx->excludes(graph_option);
  add_loss_option(cmd, loss, onnx);
}

void add_loss_option(CLI::App& cmd, std::string& loss, CLI::Option* onnx) {
  cmd.add_option("--loss", loss,
                 "What trains the ONNX model's output: cross_entropy (the output is [batch, classes] logits, each "
                 "sample's label the target) or reconstruction (an autoencoder: the mean squared error of the output "
                 "against the input itself)")
      ->capture_default_str()
      ->transform(one_of({"cross_entropy", "reconstruction"}))
      ->needs(onnx);
}

TrainingLoss training_loss(const std::string& name) {
  return name == "reconstruction" ? TrainingLoss::reconstruction : TrainingLoss::cross_entropy;
}

std::string model_arguments(const std::string& model, const std::string& onnx_file, const std::string& loss) {
  if (onnx_file.empty()) return "-m " + model;
  return "--onnx " + onnx_file + (training_loss(loss) == TrainingLoss::cross_entropy ? "" : " --loss " + loss);
}

OnnxModel import_onnx_noting(const std::string& onnx_file, const OnnxImportOptions& options) {
  OnnxModel m = import_onnx(onnx_file, options);
  for (const std::string& note : m.notes) fmt::print(stderr, "poet: note: {}\n", note);
  return m;
}

Graph GraphSource::load(OnnxModel* imported) const {
  if (!graph_file.empty()) return load_graph(graph_file);
  const auto mode = backward_mode_from_name(backward);
  POET_CHECK(mode.has_value(), "--backward is checked by CLI11");
  if (!onnx_file.empty()) {
    if (*mode != BackwardMode::Autodiff)
      throw InputError("--backward chain reproduces the reference implementation's zoo models; an ONNX model takes "
                       "--backward autodiff");
    OnnxModel m = import_onnx_noting(onnx_file, {.batch_size = batch_size, .loss = training_loss(loss)});
    Graph g = build_training_graph(m.forward, *mode);
    g.validate();
    if (imported) *imported = std::move(m);
    return g;
  }
  return build_model_training_graph(model, {.batch_size = batch_size}, *mode);
}

std::string platform_file(const std::string& platform) {
  const bool builtin = std::ranges::any_of(builtin_platforms(), [&](const auto& d) { return d.name == platform; });
  return builtin ? std::string() : platform;
}

std::vector<NamedFile> onnx_weights_files(const std::string& onnx_file) {
  std::vector<NamedFile> files;
  // A file that is no model is left for the import to refuse, with the command's context;
  // stdin is not read twice.
  if (std::error_code e; !onnx_file.empty() && std::filesystem::is_regular_file(onnx_file, e)) try {
      for (std::string& data : onnx_external_data_files(onnx_file))
        files.push_back({"--onnx (its weights file)", std::move(data)});
    } catch (const InputError&) {
    }
  return files;
}

std::vector<NamedFile> GraphSource::input_files() const {
  std::vector<NamedFile> files{{"--graph", graph_file}, {"--onnx", onnx_file}, {"--platform", platform_file(platform)}};
  std::ranges::move(onnx_weights_files(onnx_file), std::back_inserter(files));
  return files;
}

void ScheduleSource::add_options(CLI::App& cmd) {
  auto* file = cmd.add_option("-s,--schedule", schedule_file, "Schedule JSON file to use (docs/FORMATS.md)")
                   ->transform(input_file());
  // A schedule file is used as it is: a strategy or its time limit would be ignored.
  cmd.add_option("--strategy", strategy,
                 "Strategy that makes the schedule for --ram-budget when no --schedule is given: " + strategy_list())
      ->capture_default_str()
      ->transform(one_of(strategy_names()))
      ->excludes(file);
  time_limit_option =
      cmd.add_option("--time-limit", time_limit_s, "Seconds a solving strategy (poet, its ablations, checkmate) may take")
          ->capture_default_str()
          ->check(time_limit_seconds())
          ->excludes(file);
}

void require_a_solver_for_time_limit(bool given, const std::vector<std::string>& strategies) {
  if (!given || std::ranges::any_of(strategies, [](const std::string& s) { return is_strategy(s, StrategyKind::Solver); }))
    return;
  throw InputError(fmt::format("--time-limit is for a solving strategy ({}), and --strategy {} solves nothing: leave "
                               "--time-limit out, or choose a solving strategy",
                               fmt::join(strategy_names(StrategyKind::Solver), ", "), fmt::join(strategies, ",")));
}

// A hand-edited schedule that cannot run (a page-in of what was never paged out, a compute
// whose input is gone) is named by its entry, not by an instruction of a plan the user never
// saw. Simulated without the budget, which the command judges afterwards.
Schedule runnable_schedule(const std::string& file, const Graph& g, const GraphCosts& costs) {
  Schedule s = load_schedule(file, g);
  const Plan plan = plan_from_schedule(s, g);
  try {
    simulate(g, costs, plan);
  } catch (const InvalidPlan& e) {
    if (!e.instruction) throw;
    throw InvalidPlan(fmt::format("schedule '{}': {} cannot run: {}", file,
                                  schedule_entry_of(s, plan, *e.instruction), e.what()));
  }
  return s;
}

Schedule ScheduleSource::load(const Graph& g, const GraphCosts& costs, const SimulationOptions& options) const {
  if (!schedule_file.empty()) return runnable_schedule(schedule_file, g, costs);
  require_a_solver_for_time_limit(time_limit_option && time_limit_option->count() > 0, {strategy});
  // Checkpoint-all is one schedule at any budget: the simulator, not the strategy, says
  // whether it fits (and by how much it does not).
  if (strategy == "checkpoint_all") return checkpoint_all_schedule(g);
  StrategyResult r = strategy_schedule(g, costs, options);
  if (!r.found()) {
    // No budget helps a method that does not apply, and no strategy a budget below the
    // floor; the solver's reasons end with their own advice.
    const std::int64_t budget = options.ram_budget_bytes.value_or(0);
    const std::string advice =
        r.status == "does not apply" ? ""
        : budget < smallest_workable_budget(g, options).bytes
            ? "; no strategy can fit this budget: raise it"
        : r.detail.find("raise the budget") != std::string::npos ? " (or choose another strategy)"
                                                                 : "; raise the budget or choose another strategy";
    throw NoScheduleError(fmt::format("--strategy {} found no schedule within --ram-budget {}: {}{}", strategy,
                                      format_bytes_exact(budget), r.detail, advice));
  }
  return std::move(*r.schedule);
}

ScheduleForBudget ScheduleSource::replanner(const Graph& g, const GraphCosts& costs,
                                            const SimulationOptions& options) const {
  if (!schedule_file.empty() || strategy == "checkpoint_all") return {};
  return [this, &g, &costs, options](std::int64_t budget) {
    SimulationOptions at = options;
    at.ram_budget_bytes = budget;
    return strategy_schedule(g, costs, at).schedule;
  };
}

StrategyResult ScheduleSource::strategy_schedule(const Graph& g, const GraphCosts& costs,
                                                 const SimulationOptions& options) const {
  // A solve runs for up to --time-limit: an interrupt then says what it leaves.
  set_interrupt_note(fmt::format("poet: interrupted while --strategy {} was making the schedule; nothing was written",
                                 strategy));
  StrategyResult r = schedule_for_budget(strategy, g, costs,
                                         {.budget = options, .time_limit_s = time_limit_s, .progress = true});
  set_interrupt_note("");
  return r;
}

void ScheduleSource::require_fits(const Graph& g, const SimulationResult& r, const SimulationOptions& options) const {
  if (!options.ram_budget_bytes || r.peak_bytes <= *options.ram_budget_bytes) return;
  const std::int64_t budget = *options.ram_budget_bytes;
  const std::string what = fmt::format(
      "RAM budget exceeded: {} needs {} at its peak, {} over --ram-budget {}",
      schedule_file.empty() ? fmt::format("the {} schedule", strategy) : fmt::format("schedule '{}'", schedule_file),
      format_bytes_exact(r.peak_bytes), format_bytes_exact(r.peak_bytes - budget), format_bytes_exact(budget));
  const BudgetFloor least = smallest_workable_budget(g, options);
  const std::string message =
      budget < least.bytes
          ? fmt::format("{}; no schedule fits in less than {} (what computing '{}' needs with its inputs): raise "
                        "--ram-budget to that or more",
                        what, format_bytes_exact(least.bytes), g.node(least.node).name)
          : fmt::format("{}; raise --ram-budget to {} or more, or {}", what, format_bytes_exact(r.peak_bytes),
                        schedule_file.empty() ? "choose a --strategy that recomputes or pages (poet combines both)"
                                              : "make a schedule for this budget (poet solve --ram-budget ... -o FILE)");
  // A strategy's schedule over the budget is no schedule (exit 4); a file's, bad input.
  if (schedule_file.empty()) throw NoScheduleError(message);
  throw InputError(message);
}

void BudgetOptions::add_options(CLI::App& cmd) {
  cmd.add_option("--ram-budget", ram_budget,
                 "RAM budget: bytes (3000000, 3MB, 2.5MiB), or 70%: fixed memory + 70% of the unconstrained activation peak")
      ->type_name("BYTES|PERCENT");
  cmd.add_flag("--count-gradients", count_gradients,
               "Count gradients and optimizer state as fixed memory (the reference counts parameters only)");
  add_counted_optimizer_option(cmd, optimizer);
}

void add_counted_optimizer_option(CLI::App& cmd, std::string& optimizer) {
  cmd.add_option("--optimizer", optimizer, "Optimizer whose state --count-gradients counts")
      ->capture_default_str()
      ->transform(one_of(optimizer_names()))
      ->needs("--count-gradients");  // alone it counts nothing: ignored, it would mislead
}

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"sgd", "momentum", "adam"};
  return names;
}

Optimizer optimizer_named(const std::string& name) {
  return name == "adam" ? Optimizer::Adam : name == "momentum" ? Optimizer::Momentum : Optimizer::SGD;
}

SimulationOptions BudgetOptions::resolve(const Graph& g, const GraphCosts& costs) const {
  SimulationOptions options;
  options.count_gradients = count_gradients;
  options.optimizer = optimizer_named(optimizer);
  // Given empty (an unset shell variable) is an error parse_ram_budget names, not no budget.
  if (ram_budget) options.ram_budget_bytes = parse_ram_budget(*ram_budget, budget_scale(g, costs, options));
  return options;
}

}  // namespace poet::cli
