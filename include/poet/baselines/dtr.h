// Dynamic Tensor Rematerialization (Kirisame et al., ICLR 2021), simulated ahead of time:
// the training graph runs in its order under a RAM budget; when an allocation would not
// fit, the resident tensor with the smallest
//     h_DTR = cost / (bytes x staleness)
// is evicted, and an evicted tensor is recomputed when something needs it, recursively.
//   cost      = compute time of the tensor plus that of its evicted neighbourhood: the
//               evicted ancestors its recomputation would need and the evicted descendants
//               whose recomputation would need it (DTR's h_DTR, computed exactly rather
//               than with its union-find approximation);
//   staleness = computes since the tensor was last read or written (at least 1).
// Inputs of the graph (sources) are DTR's constants: never evicted. Like every tensor, a
// source is freed after its last read by the program, and a later recomputation that needs
// it reads it again (a compute of the source, as the simulator allows). Remat only.
//
// Laid onto stages: the recomputations that stage t needs run in stage t, in node order,
// and DTR may not evict what the stage still reads, so the stage matrices express it exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "poet/baselines/baseline_result.h"

namespace poet {

struct DtrEviction {
  std::size_t stage;  // the stage whose allocation needed the room
  NodeId node;        // the tensor evicted
  bool operator==(const DtrEviction&) const = default;
};

struct DtrRun {
  Schedule schedule;
  std::vector<DtrEviction> evictions;  // in order
};

// DTR under `activation_budget` bytes for tensors (fixed memory not included), or the
// reason it gets stuck: a stage whose own reads and output do not fit with nothing left
// to evict.
std::variant<DtrRun, std::string> run_dtr(const Graph& g, const GraphCosts& costs, std::int64_t activation_budget);

// DTR under options.ram_budget_bytes (less fixed memory); unconstrained it evicts nothing.
BaselineResult dtr_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options);

}  // namespace poet
