#include "poet/solve/lower_bound.h"

#include "lower_bound_covering.h"
#include "proven_bound.h"

namespace poet {

// The covering MILP's branch-and-bound stops here, deterministically; CBC's best possible
// objective is a valid bound wherever it stops. Measured on the zoo at 50-70% budgets
// (resnet18, transformer, vgg16_cifar, resnet18_cifar, mobilenet_v2): 1,000 nodes reach the
// bound 100,000 do; with 100,000 a test solving resnet18_cifar at batch 2 took 94 s, with
// 1,000 2.2 s.
constexpr long kCoveringNodeLimit = 1000;
// Stages checked for room to recompute a tensor, at most (each a small CBC problem). On
// vgg16 and vgg16_cifar (m4, 90% and 70%) 400 take the bound to the optimum in under 0.3 s.
constexpr std::size_t kMaxRoomChecks = 400;

namespace solve_internal {

ProvenBound proven_bound(const Graph& g, const GraphCosts& costs, const SolveOptions& o, double seconds) {
  ProvenBound out;
  out.bound.value = o.objective == SolveObjective::Energy ? costs.total_compute_energy_j : costs.total_compute_time_s;
  if (!o.problem_bounds) return out;
  auto covering = covering_lower_bound(g, costs, o, o.ram_budget_bytes - counted_fixed_bytes(g, o.counting()),
                                       kCoveringNodeLimit, kMaxRoomChecks, seconds);
  if (!covering) {
    out.bound.infeasible = true;
    out.bound.source = BoundSource::Covering;
    return out;
  }
  if (covering->bound > out.bound.value) {
    out.bound.value = covering->bound;
    out.bound.source = BoundSource::Covering;
  }
  out.cover = std::move(covering->cover);
  return out;
}

}  // namespace solve_internal

LowerBound lower_bound(const Graph& g, const GraphCosts& costs, const SolveOptions& o, double seconds) {
  return solve_internal::proven_bound(g, costs, o, seconds).bound;
}

}  // namespace poet
