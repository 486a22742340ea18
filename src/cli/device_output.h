// The device outputs `poet plan` and `poet solve` share: a plan's static memory plan, and
// the plan in the binary device format and as a C header.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "poet/graph/graph.h"
#include "poet/lower/fit_arena.h"
#include "poet/util/atomic_file.h"

namespace poet::cli {

struct DeviceOutputs {
  std::string device_plan;  // binary device format; none if empty
  std::string c_header;     // C header; none if empty
  bool wanted() const { return !device_plan.empty() || !c_header.empty(); }
  void add_options(CLI::App& cmd);
};

// Reports the lowered plan's arena on stderr (checked for overlaps) and the budget a replan
// made its schedule for, warns if the arena with the fixed memory is over
// `ram_budget_bytes`, and returns the files `out` names, for the caller to write with its
// own (write_files_atomically: all or none).
std::vector<FileContents> device_output_files(const Graph& g, const ArenaFit& fit, const DeviceOutputs& out,
                                              std::optional<std::int64_t> ram_budget_bytes);

}  // namespace poet::cli
