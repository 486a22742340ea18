// The `poet` command line: one registration function per subcommand. The CLI is a thin
// layer over libpoet; each command parses options, calls the library and prints.
#pragma once

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "poet/simulate/simulator.h"

namespace poet::cli {

// Exit codes (documented in README.md and per command in docs/JSON.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // a runtime failure: I/O, a solve that failed
inline constexpr int kExitBadInput = 2;  // bad usage, unknown names, invalid files
inline constexpr int kExitInternal = 3;  // a bug in poet
inline constexpr int kExitNoSchedule = 4;  // a solve found no schedule (infeasible, or none in time)

// Thrown by a command that has printed its answer and must end with this exit code.
struct ExitWith {
  int code;
};

// A strategy's schedule that does not fit the budget, or no schedule: printed as an error,
// exit kExitNoSchedule (the same answer as solve's and train's), where a schedule file
// that does not fit is bad input.
class NoScheduleError : public InputError {
 public:
  using InputError::InputError;
};

inline constexpr const char* kDefaultModel = "resnet18_cifar";
inline constexpr const char* kDefaultPlatform = "a72";

// The simulator's figures as JSON, for every command's --json.
nlohmann::json simulation_to_json(const SimulationResult& r, const SimulationOptions& o);

void add_models_command(CLI::App& app);
void add_platforms_command(CLI::App& app);
void add_graph_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_check_plan_command(CLI::App& app);
void add_show_command(CLI::App& app);
void add_solve_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_firmware_command(CLI::App& app);

}  // namespace poet::cli
