// One restoration a solution of the covering relaxation (lower_bound_covering.h) chose: a
// tensor absent before its use in stage `use`, and restored for it by a page-in or by a
// recomputation. The eviction heuristic can start from them (eviction_heuristic.h).
#pragma once

#include <cstddef>

namespace poet::solve_internal {

struct Restoration {
  std::size_t tensor = 0;
  std::size_t use = 0;
  bool paged = false;  // else recomputed
};

}  // namespace poet::solve_internal
