// CBC does not check its time limit while it solves the root LP, which on large graphs
// takes minutes. This runs it in a child process and ends that process if it overruns the
// wall-clock limit, so `--time-limit` is a promise. A crash of CBC's stays in the child too.
#pragma once

#include <string>

#include "cbc_runner.h"

namespace poet::solve_internal {

// run_cbc in a child process that has options.time_limit_s of wall clock: CBC is told 90%
// of it (it checks its limit between nodes, and needs a moment to report), and the process
// is ended at the limit, or when options.stop_requested(). When ended, the outcome has no
// solution and `timed_out` set.
struct GuardedOutcome {
  CbcOutcome outcome;
  bool timed_out = false;
  std::string crash;  // how CBC died, if it did (e.g. SIGSEGV in Clp's presolve of some infeasible models)
};

GuardedOutcome run_cbc_guarded(const MilpModel& model, const SolveOptions& options, const std::vector<double>* start,
                               bool preprocess = true);

}  // namespace poet::solve_internal
