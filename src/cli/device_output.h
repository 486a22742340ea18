// The device outputs `poet plan` and `poet solve` share: a plan's static memory plan, and
// the plan in the binary device format and as a C header.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "poet/graph/graph.h"
#include "poet/lower/fit_arena.h"

namespace poet::cli {

struct DeviceOutputs {
  std::string device_plan;  // binary device format; none if empty
  std::string c_header;     // C header; none if empty
  bool wanted() const { return !device_plan.empty() || !c_header.empty(); }
  void add_options(CLI::App& cmd);
};

// Reports the lowered plan's arena on stderr (checked for overlaps) and the budget a replan
// made its schedule for, warns if the arena with the fixed memory is over
// `ram_budget_bytes`, and writes the files `out` names, each atomically.
void write_device_outputs(const Graph& g, const ArenaFit& fit, const DeviceOutputs& out,
                          std::optional<std::int64_t> ram_budget_bytes);

}  // namespace poet::cli
