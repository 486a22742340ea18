// What an interrupted sweep keeps: the rows of the tasks it finished, saved after each one,
// so that `poet sweep --resume` runs only the rest. The file names the sweep it belongs to
// (graph, platform, solve limits); rows from another sweep are never mixed in.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "poet/sweep/sweep.h"

namespace poet {

// The options that decide a sweep's rows, beyond the tasks themselves.
struct SweepIdentity {
  std::string graph;     // the graph's name and batch size, as the output folder names it
  std::string platform;  // as given
  double time_limit_s = 0;
  double relative_gap = 0;
  std::string costs;  // costs_checksum in hex: an edited device profile or graph file changes it
};

// How many of the tasks have a row.
std::size_t rows_finished(const SweepRowsSoFar& rows);

nlohmann::json sweep_progress_to_json(const SweepIdentity& identity, const SweepRowsSoFar& rows);

// The finished rows of `progress` (read from `path`, named in messages) for `tasks`, in
// task order; tasks it did not finish are empty. Throws InputError if it is not a sweep's
// progress or was made with another identity.
SweepRowsSoFar sweep_rows_to_resume(const nlohmann::json& progress, const std::string& path,
                                    const SweepIdentity& identity, const std::vector<SweepTask>& tasks);

}  // namespace poet
