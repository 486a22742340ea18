// Tests give the same verdict on a slow, busy machine: a solve that runs CBC is bounded by
// work (branch-and-bound nodes, searched serially: SolveOptions::max_nodes), never by
// seconds. The wall-clock limit only guards against a hang: far beyond what the work takes
// even under a sanitizer on a loaded machine, it is never what ends a test's solve.
#pragma once

#include "poet/solve/solve.h"
#include "poet/sweep/sweep.h"

namespace poet::testing {

inline constexpr double kHangGuardSeconds = 3600;

// `max_nodes` is a bound on the search, above what the test's instances need to finish.
inline void limit_by_work(SolveOptions& o, long max_nodes) {
  o.max_nodes = max_nodes;
  o.time_limit_s = kHangGuardSeconds;
}

// The same for every POET and Checkmate solve of a sweep.
inline void limit_by_work(SweepSettings& s, long max_nodes) {
  s.max_nodes = max_nodes;
  s.time_limit_s = kHangGuardSeconds;
}

}  // namespace poet::testing
