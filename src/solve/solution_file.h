// Reads back another solver's solution of the model `--write-model` wrote, so users with
// Gurobi, HiGHS or SCIP can solve it there and plan, simulate and run the result here.
#pragma once

#include <string>
#include <vector>

#include "milp_model.h"

namespace poet::solve_internal {

// Accepts the common text formats: Gurobi's .sol ("name value"), SCIP's ("name value
// (obj:c)", zeros left out), HiGHS's ("name value" under "# Columns"), CBC's ("index name
// value cost"). A line counts when one of its words is a column of `model` and a number
// follows it; '#' starts a comment. Columns not named are 0. Throws InputError naming the
// file when it names no column of the model, or a value is not a number.
std::vector<double> read_solution_file(const MilpModel& model, const std::string& path);

// Writes `x` (a value per column of `model`) in the format read_solution_file reads, whole
// or not at all.
void write_solution_file(const MilpModel& model, const std::vector<double>& x, const std::string& path);

}  // namespace poet::solve_internal
