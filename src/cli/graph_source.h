// Options shared by the commands that work on a training graph: where the graph comes from
// (a zoo model or a JSON file), the device, and - for commands that judge a schedule -
// where the schedule comes from and the memory budget.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "files_apart.h"
#include "poet/budget/budget.h"
#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/lower/fit_arena.h"
#include "poet/onnx/onnx_import.h"
#include "poet/schedule/schedule.h"
#include "poet/simulate/simulator.h"
#include "poet/strategy/strategy.h"

namespace poet::cli {

// The largest batch a zoo model is built for: far above any device's, and it keeps every
// tensor of the zoo's models within the graph's limits.
inline constexpr int kMaxBatchSize = 1 << 20;

// A CLI11 check that an option's value is a plain decimal number in [lo, hi] (a whole one
// if `whole`), whose message says so in those words.
CLI::Validator number_in(double lo, double hi, bool whole = false);

// A CLI11 check that an option's value (each of a list's) is one of `names`, spaces around
// it dropped ("poet, dtr"); its message names the nearest one and lists them all, where
// CLI11's said "--strategy:  dtr not in {...}".
CLI::Validator one_of(std::vector<std::string> names);

// The one range every --time-limit of a solve takes (solve, sweep, train, and the
// strategies of plan, simulate and show), in seconds.
inline CLI::Validator time_limit_seconds() { return number_in(0.001, 1e6); }
// A seed of the weights, the batch order and dropout (train's and firmware's: the same seed
// gives both the same weights and batches). CLI11 alone would take "-1" as 2^64 - 1.
inline CLI::Validator seed_values() { return number_in(0, 1e19, true); }

// File options take "-" for the standard stream, as most command-line tools do: an input
// reads stdin, an output writes stdout. These validators turn "-" into /dev/stdin or
// /dev/stdout, which the readers and writers take already, so they go with ->transform
// (CLI11 runs an option's transforms last added first).

// An option that reads a file.
CLI::Validator input_file();
// --platform: a built-in platform's name or a device profile file (a note when a file in
// the working folder has a built-in's name, which wins).
CLI::Validator platform_name_or_file();
// An input that must name an existing file (not a folder) when parsed, in poet's words
// rather than CLI11's.
CLI::Validator existing_file();
// A CLI11 check that the option names an existing folder.
CLI::Validator existing_folder();
// An option that names a folder to write files into (made if missing, when the command
// runs): not empty (an unset shell variable) and not "-", which is no folder.
CLI::Validator output_folder();

// An option that writes a file: that one can be written at the option's value followed by
// `suffix` (output_path_problem), checked at parse time, before the work whose result it
// would hold. With a suffix the value is a prefix, which no stream can be ("-" is refused).
CLI::Validator output_file(std::string suffix = "");

// When an output option named stdout (`-o -`), hands stdout to that file (give_stdout_to):
// what poet says goes to stderr from then on. Called once parsing is done: CLI11 runs the
// validators before --help, whose text must still go to stdout.
void give_stdout_to_its_file();

// The device profile file --platform names; empty for a built-in platform.
std::string platform_file(const std::string& platform);

struct GraphSource {
  std::string model;
  std::string graph_file;
  std::string onnx_file;  // an ONNX model (torch.onnx.export), imported for batch_size
  std::string platform;
  int batch_size = 1;
  std::string backward = "autodiff";
  std::string loss = "cross_entropy";  // --loss, for --onnx

  void add_options(CLI::App& cmd);
  // --onnx FILE, which excludes the model option `model_option` (and --graph, if given).
  void add_onnx_option(CLI::App& cmd, CLI::Option* model_option, CLI::Option* graph_option = nullptr);
  // The zoo model's training graph, the ONNX model's, or the file's graph. For --onnx, the
  // import (its weights) goes to `imported` too, if given.
  Graph load(OnnxModel* imported = nullptr) const;
  // The files it reads: --graph, --onnx, and --platform when that names no built-in platform.
  std::vector<NamedFile> input_files() const;
};

struct ScheduleSource {
  std::string schedule_file;
  std::string strategy = "checkpoint_all";
  double time_limit_s = 60;  // of a solving strategy
  const CLI::Option* time_limit_option = nullptr;  // whether --time-limit was given

  void add_options(CLI::App& cmd);
  // The schedule file, else the strategy's schedule for the budget `options` gives
  // (InputError when it finds none, with its reason).
  Schedule load(const Graph& g, const GraphCosts& costs, const SimulationOptions& options) const;
  // The strategy's schedule for another budget, `options` otherwise (lower_to_fit_arena's
  // replan); none for a schedule file or checkpoint-all, which no budget changes.
  ScheduleForBudget replanner(const Graph& g, const GraphCosts& costs, const SimulationOptions& options) const;
  // The strategy's result for the budget of `options`, with its progress on stderr.
  StrategyResult strategy_schedule(const Graph& g, const GraphCosts& costs, const SimulationOptions& options) const;
  // Throws InputError when `r` (simulate_for_budget's, of this source's schedule) needs more
  // than the budget of `options`: by how much, and what to do about it.
  void require_fits(const Graph& g, const SimulationResult& r, const SimulationOptions& options) const;
};

// import_onnx, with the import's notes on stderr ("poet: note: ..."), for every command.
OnnxModel import_onnx_noting(const std::string& onnx_file, const OnnxImportOptions& options);

// --loss cross_entropy|reconstruction into `loss`, for an ONNX model (`onnx`, the --onnx
// option, which it needs); and the loss it names.
void add_loss_option(CLI::App& cmd, std::string& loss, CLI::Option* onnx);
TrainingLoss training_loss(const std::string& name);
// The arguments that name the model again in a command the user is told to run: "-m MODEL",
// or "--onnx FILE" and its --loss where that is not the default.
std::string model_arguments(const std::string& model, const std::string& onnx_file, const std::string& loss);

// The files beside an ONNX model that hold its weights (external data), as inputs no
// output may replace; none for no file, a stream, or a file that is no model.
std::vector<NamedFile> onnx_weights_files(const std::string& onnx_file);

// Throws InputError when --time-limit was given (`given`) and none of `strategies` solves:
// the limit would be ignored.
void require_a_solver_for_time_limit(bool given, const std::vector<std::string>& strategies);

// The optimizers a command line can name ("sgd", "momentum", "adam"), and the one a name
// means (names are checked by CLI11 against optimizer_names()).
const std::vector<std::string>& optimizer_names();
Optimizer optimizer_named(const std::string& name);
// --optimizer: the optimizer whose state --count-gradients counts (plan, simulate, solve).
void add_counted_optimizer_option(CLI::App& cmd, std::string& optimizer);

struct BudgetOptions {
  std::optional<std::string> ram_budget;  // bytes with a suffix, or a percent of the unconstrained peak; none: no budget
  bool count_gradients = false;
  std::string optimizer = "sgd";

  void add_options(CLI::App& cmd);
  // Simulation options with the budget resolved; a percent is of the checkpoint-all peak.
  SimulationOptions resolve(const Graph& g, const GraphCosts& costs) const;
};

}  // namespace poet::cli
