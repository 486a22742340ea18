// Runs COIN-OR CBC on a MilpModel with CBC's standard strategy (cuts, heuristics), an
// optional MIP start, a wall-clock limit, and progress on stderr for long solves.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "milp_model.h"

class OsiClpSolverInterface;

namespace poet::solve_internal {

// Loads rows (columns numbered 0 .. objective.size() - 1) into Clp, quietly; integrality is
// the caller's.
void load_rows(OsiClpSolverInterface& solver, const std::vector<Row>& rows, const std::vector<double>& lower,
               const std::vector<double>& upper, const std::vector<double>& objective);

struct CbcOutcome {
  bool proven_optimal = false;
  bool proven_infeasible = false;
  std::optional<std::vector<double>> solution;
  double objective = 0;  // scaled, as the model's objective
  double bound = 0;      // scaled
  long nodes = 0;
  double seconds = 0;
};

// `preprocess` false turns off CBC's preprocessing and Clp's presolve (a fallback: Debian's
// CBC 2.10.8 crashes in them on some infeasible models).
CbcOutcome run_cbc(const MilpModel& model, const SolveOptions& options, const std::vector<double>* start,
                   bool preprocess = true);

// Throws InputError unless `path` ends in .mps or .lp and its folder exists: checked before
// a solve, so a wrong path fails at once and not after the time limit.
void check_model_path(const std::string& path);

// Writes the model as MPS (path ending .mps) or LP (.lp) for other solvers, atomically: CBC
// writes into a private temporary folder, then write_file_atomically moves the text in.
void write_model(const MilpModel& model, const std::string& path);

}  // namespace poet::solve_internal
