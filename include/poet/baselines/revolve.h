// Griewank & Walther's binomial checkpointing ("revolve", ACM TOMS 2000) for chains: the
// reversal of a chain of `steps` steps with `slots` checkpoints (the one holding the
// chain's input included) that needs the fewest forward steps.
//
// A chain here is forward nodes x_0 (the input) .. x_L (the loss) where x_k reads only
// x_{k-1}; step k computes x_k, and its reversal is the backward nodes that read x_{k-1}
// and x_k. On any other graph revolve reports that it does not apply.
#pragma once

#include <cstdint>
#include <vector>

#include "poet/baselines/baseline_result.h"

namespace poet {

// beta(s, r) = C(s + r, s): the longest chain s slots reverse with each step advanced at
// most r times.
std::int64_t revolve_beta(int slots, int repetitions);

// The least number of forward steps (advances, the first forward sweep included, the
// turns' own evaluations not) to reverse `steps` steps with `slots` slots, by Griewank and
// Walther's closed form r * l - beta(s + 1, r - 1), with r the least such that l <= beta(s, r).
std::int64_t revolve_min_forward_steps(int steps, int slots);

struct RevolveAction {
  enum class Kind { Advance, Store, Release, Turn };
  Kind kind;
  int step;  // Advance: compute x_step; Store/Release: the checkpoint x_step; Turn: reverse step `step`
  bool operator==(const RevolveAction&) const = default;
};

// The optimal reversal by dynamic programming over where to place the next checkpoint,
// tabulated once for every slot count up to max_slots.
class BinomialReversal {
 public:
  BinomialReversal(int steps, int max_slots);
  std::int64_t forward_steps(int slots) const;
  std::vector<RevolveAction> actions(int slots) const;

 private:
  void emit(int from, int to, int free_slots, std::vector<RevolveAction>& out) const;
  int steps_;
  std::vector<std::vector<std::int64_t>> cost_;  // [free slots][length]
  std::vector<std::vector<int>> split_;          // [free slots][length]: advance this far, then store
};

// The revolve schedule of a chain training graph, or why revolve does not apply to `g`.
// Throws InputError for slots < 1.
BaselineResult revolve_schedule(const Graph& g, int slots);

// Sweeps slots from 1 to the chain length; returns the schedule with the least compute
// time that fits the budget (ties: the lower peak), or why there is none.
BaselineResult revolve_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options);

}  // namespace poet
