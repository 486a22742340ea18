// POFO (Beaumont et al., NeurIPS 2021, "Efficient Combination of Rematerialization and
// Offloading for Training DNNs"): for chains, the schedule with the least time under a
// memory limit, by dynamic programming over what happens to each activation.
//
// The space searched here: every intermediate activation x_k (0 < k < L) of the chain
// x_0 .. x_L is, after its forward read,
//   Keep     - held in RAM until its backward is done;
//   Offload  - paged out once and paged in when the backward next needs it (at most one
//              offload per activation);
//   Drop     - recomputed once in the backward, with the rest of its segment, from the
//              nearest earlier activation that is not dropped (a checkpoint).
// x_0 and the loss x_L are kept. This is POFO's single-level space: the paper's DP also
// recurses into segments (recomputing a segment with its own checkpoints); that is not done.
//
// Time model: every compute and recompute, plus the part of an offload's page-out +
// page-in time that the compute between them cannot hide (the forward after the
// activation's forward read and the backward before its segment is reversed).
// Memory model: the activations resident at each forward compute, recompute and backward
// step, plus each step's own backward working set. The simulator judges the laid-out
// schedule; pofo_for_budget searches for the largest DP limit whose schedule it fits.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "poet/baselines/baseline_result.h"

namespace poet {

// A chain as the DP sees it; index k = 0 .. L (entries at 0 unused where noted).
struct PofoChain {
  std::vector<std::int64_t> size;      // x_k's bytes, in the DP's memory unit
  std::vector<double> forward_s;       // time to compute x_k (unused at 0)
  std::vector<double> backward_s;      // time of step k's backward (unused at 0)
  std::vector<std::int64_t> gradient;  // step k's backward working set besides x_{k-1}, x_k (unused at 0)
  std::vector<double> transfer_s;      // page-out + page-in time of x_k
  std::vector<bool> reads_output;      // step k's backward reads x_k too, not only x_{k-1} (unused at 0)
  int steps() const { return static_cast<int>(size.size()) - 1; }
};

enum class PofoFate { Keep, Offload, Drop };

struct PofoEvaluation {
  double time_s = 0;
  std::int64_t peak = 0;  // memory units
};

// The model played out for one choice of fates (fate[0] and fate[L] must be Keep): the
// definition the dynamic program optimizes, and the brute force's judge.
PofoEvaluation pofo_evaluate(const PofoChain& chain, const std::vector<PofoFate>& fate);

struct PofoSolution {
  std::vector<PofoFate> fate;
  PofoEvaluation evaluation;
};

// The least-time fates whose peak is within `memory` units, or nothing if none is.
std::optional<PofoSolution> pofo_optimum(const PofoChain& chain, std::int64_t memory);

// POFO on a chain training graph, or why it does not apply (not a chain) or does not fit.
BaselineResult pofo_for_budget(const Graph& g, const GraphCosts& costs, const SimulationOptions& options);

}  // namespace poet
