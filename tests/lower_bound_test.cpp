// The proven lower bounds (poet/solve/lower_bound.h) against exact optima: the full MILP
// solved to optimality by CBC (without those bounds, so that the optimum does not rest on
// them) on small random graphs, in every mode, accounting and objective, with and without a
// deadline. A bound above an optimum would let poet call a poor schedule optimal.
#include "poet/solve/lower_bound.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "../src/solve/lower_bound_covering.h"
#include "poet/schedule/checkpoint_all.h"
#include "hand_graph.h"
#include "poet/plan/plan.h"
#include "poet/graph/op_table.h"
#include "random_graphs.h"
#include "test_scale.h"

namespace poet {
namespace {

// Compute, page-in and page-out of a tensor cost about the same (a 1e6 FLOP node takes 1 s,
// a 2 KiB tensor 1 s to page), so that the cheapest restoration differs from tensor to tensor.
DeviceProfile balanced_device() {
  DeviceProfile d;
  d.name = "balanced";
  d.flops_per_second = 1e6;
  d.flops_per_joule = 2e6;
  d.pagein_latency_s = 0.2;
  d.pagein_bytes_per_s = 2048;
  d.pageout_latency_s = 0.1;
  d.pageout_bytes_per_s = 4096;
  d.memory_power_w = 0.4;
  return d;
}

struct BoundCase {
  SolveMode mode;
  Accounting accounting;
  SolveObjective objective;
  bool deadline;
};

std::string describe(const BoundCase& c, int graph, std::int64_t budget) {
  return "graph " + std::to_string(graph) + ", budget " + std::to_string(budget) + ", mode " +
         std::to_string(static_cast<int>(c.mode)) + ", " + (c.accounting == Accounting::Strict ? "strict" : "reference") +
         ", " + (c.objective == SolveObjective::Energy ? "energy" : "time") + (c.deadline ? ", deadline" : "");
}

SolveOptions case_options(const BoundCase& c, std::int64_t budget, const GraphCosts& costs) {
  SolveOptions o;
  o.mode = c.mode;
  o.accounting = c.accounting;
  o.objective = c.objective;
  o.ram_budget_bytes = budget;
  if (c.deadline) o.deadline_s = 1.1 * costs.total_compute_time_s;
  o.progress = false;
  o.relative_gap = 0;
  o.time_limit_s = 600;  // a guard: these MILPs solve in well under a second
  return o;
}

// CBC to optimality on the MILP alone, without the bounds under test.
SolveResult exact_optimum(const Graph& g, const GraphCosts& costs, SolveOptions o) {
  o.problem_bounds = false;
  return solve(g, costs, o);
}

// On a hand graph, hand_device() costs and reference accounting, the bound equals the exact
// optimum, compute-once + `extra_j`.
void expect_bound_at_the_optimum(const Graph& g, std::int64_t budget, double extra_j) {
  const GraphCosts costs = estimate_costs(g, testing::hand_device());
  const SolveOptions o = case_options({SolveMode::RematAndPaging, Accounting::Reference, SolveObjective::Energy, false},
                                      budget, costs);
  const LowerBound bound = lower_bound(g, costs, o, 600);
  const SolveResult exact = exact_optimum(g, costs, o);
  ASSERT_EQ(exact.status, SolveStatus::Optimal) << exact.message;
  std::printf("bound compute-once + %g J, optimum compute-once + %g J\n", bound.value - costs.total_compute_energy_j,
              exact.objective - costs.total_compute_energy_j);
  EXPECT_LE(bound.value, exact.objective * (1 + 1e-12));
  EXPECT_NEAR(bound.value, costs.total_compute_energy_j + extra_j, 1e-9);
}

TEST(LowerBound, NeverAboveTheMilpOptimum) {
  std::mt19937 rng(13);
  const DeviceProfile device = balanced_device();
  std::vector<BoundCase> cases;
  for (SolveMode mode : {SolveMode::RematAndPaging, SolveMode::RematOnly, SolveMode::PagingOnly})
    for (Accounting accounting : {Accounting::Reference, Accounting::Strict})
      for (SolveObjective objective : {SolveObjective::Energy, SolveObjective::Time})
        for (bool deadline : {false, true}) cases.push_back({mode, accounting, objective, deadline});
  int optima = 0, above_compute_once = 0, proven_infeasible = 0, raised_by_room = 0;
  // Twelve graphs: the tenth is the first where the covering bound's inputs (below) raise it.
  const int graphs = testing::test_cases(12);
  for (int graph = 0; graph < graphs; ++graph) {
    const Graph g = testing::random_graph(rng, std::uniform_int_distribution<int>(7, 11)(rng));
    GraphCosts costs = estimate_costs(g, device);
    // No node free to make (the input included), or every tensor would be dropped for nothing.
    for (NodeCost& c : costs.nodes) {
      c.compute_time_s += 0.3;
      c.compute_energy_j += 0.15;
      costs.total_compute_time_s += 0.3;
      costs.total_compute_energy_j += 0.15;
    }
    const std::int64_t peak = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g)).peak_bytes;
    const std::int64_t least = g.largest_footprint().bytes;
    const double fraction = std::uniform_real_distribution<double>(0.0, 0.5)(rng);
    const auto budget = least + static_cast<std::int64_t>(fraction * static_cast<double>(peak - least));
    for (const BoundCase& c : cases) {
      const SolveOptions o = case_options(c, budget, costs);
      const LowerBound bound = lower_bound(g, costs, o, 600);
      const SolveResult exact = exact_optimum(g, costs, o);
      const std::string where = describe(c, graph, budget);
      const double compute_once =
          c.objective == SolveObjective::Energy ? costs.total_compute_energy_j : costs.total_compute_time_s;
      EXPECT_GE(bound.value, compute_once * (1 - 1e-12)) << where;
      if (bound.infeasible) {
        ++proven_infeasible;
        EXPECT_FALSE(exact.simulation) << where << ": the bound says infeasible, the MILP found a schedule";
        continue;
      }
      if (exact.message.find("fails in the simulator") != std::string::npos)
        continue;  // the MILP's optimum breaks the budget in the simulator (it counts memory per stage)
      if (exact.status != SolveStatus::Optimal) {
        EXPECT_EQ(exact.status, SolveStatus::Infeasible) << where << ": " << exact.message;
        continue;
      }
      ++optima;
      if (bound.value > compute_once * (1 + 1e-9)) ++above_compute_once;
      // The same cover without checking the stages for room to recompute.
      const auto without_room = solve_internal::covering_lower_bound(
          g, costs, o, o.ram_budget_bytes - counted_fixed_bytes(g, o.counting()), 1000, 0, 600);
      if (without_room && bound.value > without_room->bound * (1 + 1e-9)) ++raised_by_room;
      EXPECT_LE(bound.value, exact.objective * (1 + 1e-9)) << where;
    }
  }
  // The test means something only if the bounds were tested where they say more than
  // compute-once, and on both sides of feasibility.
  EXPECT_GE(optima, 100 * graphs / 12);
  EXPECT_GE(above_compute_once, 10 * graphs / 12);
  EXPECT_GE(raised_by_room, graphs / 12);
  std::printf("%d optima, %d with the bound above compute-once, %d of them raised by room checks, %d proven infeasible by the bound\n",
              optima, above_compute_once, raised_by_room, proven_infeasible);
}

// With nodes computed in place (adds of their first input's size): the MILP counts an
// input FREE releases after a node computed over it as released at the node's own step,
// and the bounds leave it out there; neither may pass the exact optimum, whose schedule
// the simulator holds to the budget.
TEST(LowerBound, NeverAboveTheMilpOptimumWithNodesComputedInPlace) {
  std::mt19937 rng(29);
  const DeviceProfile device = balanced_device();
  int optima = 0, in_place_nodes = 0, simulator_rejects = 0;
  const int graphs = testing::test_cases(10);
  for (int graph = 0; graph < graphs; ++graph) {
    const Graph g = testing::random_graph(rng, std::uniform_int_distribution<int>(7, 11)(rng),
                                          {.in_place_probability = 0.6});
    for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v) in_place_nodes += in_place_input(g, v).has_value();
    const GraphCosts costs = estimate_costs(g, device);
    const std::int64_t peak = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g)).peak_bytes;
    const std::int64_t least = g.largest_footprint().bytes;
    for (const double fraction : {0.0, 0.3}) {
      const auto budget = least + static_cast<std::int64_t>(fraction * static_cast<double>(peak - least));
      for (const SolveMode mode : {SolveMode::RematAndPaging, SolveMode::RematOnly})
        for (const Accounting accounting : {Accounting::Reference, Accounting::Strict}) {
          const BoundCase c{mode, accounting, SolveObjective::Energy, false};
          const SolveOptions o = case_options(c, budget, costs);
          const LowerBound bound = lower_bound(g, costs, o, 600);
          const SolveResult exact = exact_optimum(g, costs, o);
          const std::string where = describe(c, graph, budget);
          if (exact.message.find("fails in the simulator") != std::string::npos) {
            ++simulator_rejects;
            continue;
          }
          if (bound.infeasible) {
            EXPECT_FALSE(exact.simulation) << where << ": the bound says infeasible, the MILP found a schedule";
            continue;
          }
          if (exact.status != SolveStatus::Optimal) continue;
          ++optima;
          // The reference's accounting does not count page-in buffers; strict counts all.
          if (accounting == Accounting::Strict) {
            EXPECT_LE(exact.simulation->peak_bytes, budget) << where;
          }
          EXPECT_LE(bound.value, exact.objective * (1 + 1e-9)) << where;
        }
    }
  }
  EXPECT_GE(in_place_nodes, graphs);
  EXPECT_GE(optima, 2 * graphs);
  EXPECT_LE(simulator_rejects, optima / 10);
  std::printf("%d nodes computed in place, %d optima, %d MILP optima the simulator rejected\n", in_place_nodes, optima,
              simulator_rejects);
}

// A recomputation needs its inputs resident, and room in the stage that makes it.
// x -> a -> b -> c1 -> c2 -> loss, and the loss's gradient reads b: b (80 B) waits in RAM
// from stage 3 to stage 6. With a budget of 160 B (stage 2's own footprint: a and b) it
// cannot stay through stage 4 (c1 60 B, c2 60 B), so it is restored: paged (page-out 2.5 J +
// page-in 4.5 J) or recomputed (2 J) from a, whose only reader is b. Keeping a (80 B)
// instead of b frees nothing, so a recomputation also restores a: the covering alone says
// compute-once + 4 J. But no stage of b's gap has room to recompute it: a and b take the
// whole budget at b's step, and each of stages 4, 5 and 6 needs another tensor then (c1,
// c2, the loss) to compute its own node. So b is paged: compute-once + 7 J, the optimum.
TEST(LowerBound, RecomputationNeedsItsInputsAndRoomInItsStage) {
  using testing::add_hand_node;
  Graph g("private-input");
  add_hand_node(g, "x", OpKind::Input, Role::Forward, 10, 0, {});
  // Convolutions: none is computed in place over its input (b over a would free a's bytes).
  add_hand_node(g, "a", OpKind::Conv2d, Role::Forward, 20, 4, {0});
  add_hand_node(g, "b", OpKind::Conv2d, Role::Forward, 20, 4, {1});
  add_hand_node(g, "c1", OpKind::Conv2d, Role::Forward, 15, 4, {2});
  add_hand_node(g, "c2", OpKind::Conv2d, Role::Forward, 15, 4, {3});
  add_hand_node(g, "loss", OpKind::SoftmaxCrossEntropy, Role::Loss, 5, 2, {4});
  add_hand_node(g, "d_b", OpKind::ChainGradient, Role::Backward, 10, 8, {5, 2});
  const GraphCosts costs = estimate_costs(g, testing::hand_device());
  SolveOptions o;
  o.accounting = Accounting::Reference;
  o.ram_budget_bytes = 160;
  o.progress = false;
  o.relative_gap = 0;
  o.time_limit_s = 600;  // a guard: this MILP solves in well under a second
  const LowerBound bound = lower_bound(g, costs, o, 600);
  EXPECT_EQ(bound.source, BoundSource::Covering);
  EXPECT_NEAR(bound.value, costs.total_compute_energy_j + 7, 1e-9);
  const SolveResult exact = exact_optimum(g, costs, o);
  ASSERT_EQ(exact.status, SolveStatus::Optimal) << exact.message;
  EXPECT_NEAR(bound.value, exact.objective, 1e-9);
}

// A recomputation's private input needs its own inputs too. x -> c -> r -> b -> d1 -> d2 ->
// loss, and the loss's gradient reads b (40 B): with a budget of 240 B, stage 5 (d1 and d2,
// 120 B each) has no room for b. b is restored: paged (page-out 1.5 J + page-in 2.5 J) or
// recomputed (1 J) from r, whose only reader it is: r kept (80 B) frees nothing, so r is
// restored, paged in (4.5 J) or recomputed (1 J) from c, its only reader: c kept frees
// nothing, so c is restored too (10 J, or a page-in of 4.5 J). Flat, the cover took r's
// restoration for 1 J: compute-once + 2 J; with r's own inputs, paging b is cheaper:
// compute-once + 4 J, the optimum. (Convolutions: nothing is computed in place.)
TEST(LowerBound, ARestoredInputNeedsItsOwnInputs) {
  using testing::add_hand_node;
  Graph g("nested-private-inputs");
  add_hand_node(g, "x", OpKind::Input, Role::Forward, 10, 0, {});
  add_hand_node(g, "c", OpKind::Conv2d, Role::Forward, 20, 20, {0});
  add_hand_node(g, "r", OpKind::Conv2d, Role::Forward, 20, 2, {1});
  add_hand_node(g, "b", OpKind::Conv2d, Role::Forward, 10, 2, {2});
  add_hand_node(g, "d1", OpKind::Conv2d, Role::Forward, 30, 4, {3});
  add_hand_node(g, "d2", OpKind::Conv2d, Role::Forward, 30, 4, {4});
  add_hand_node(g, "loss", OpKind::SoftmaxCrossEntropy, Role::Loss, 5, 2, {5});
  add_hand_node(g, "d_b", OpKind::ChainGradient, Role::Backward, 10, 8, {6, 3});
  expect_bound_at_the_optimum(g, 240, 4);
}

// A recomputation needs its inputs even when others read them: x -> c -> r -> b -> e ->
// d1 -> d2 -> loss, where e (4 B) reads r too and the loss's gradient reads b (40 B). With
// a budget of 240 B, stage 6 (d1 and d2, 120 B each) has no room for b, so b is restored:
// paged (page-out 1.5 J + page-in 2.5 J) or recomputed (1 J) from r. r is not b's alone,
// yet after e (stage 4) nothing reads it: kept (80 B) it frees nothing, so it is restored
// too, paged in (4.5 J) or recomputed (1 J) from c, kept (frees nothing), recomputed (10 J)
// or paged in (4.5 J). Taking r as resident because e reads it, the cover took b's
// recomputation for 1 J: compute-once + 1 J; paging b is cheaper: compute-once + 4 J, the
// optimum. (Convolutions: nothing is computed in place.)
TEST(LowerBound, AnInputOthersReadIsStillNeededAfterItsLastReader) {
  using testing::add_hand_node;
  Graph g("shared-input");
  add_hand_node(g, "x", OpKind::Input, Role::Forward, 10, 0, {});
  add_hand_node(g, "c", OpKind::Conv2d, Role::Forward, 20, 20, {0});
  add_hand_node(g, "r", OpKind::Conv2d, Role::Forward, 20, 2, {1});
  add_hand_node(g, "b", OpKind::Conv2d, Role::Forward, 10, 2, {2});
  add_hand_node(g, "e", OpKind::Conv2d, Role::Forward, 1, 2, {2});
  add_hand_node(g, "d1", OpKind::Conv2d, Role::Forward, 30, 4, {4});
  add_hand_node(g, "d2", OpKind::Conv2d, Role::Forward, 30, 4, {5});
  add_hand_node(g, "loss", OpKind::SoftmaxCrossEntropy, Role::Loss, 5, 2, {6});
  add_hand_node(g, "d_b", OpKind::ChainGradient, Role::Backward, 10, 8, {7, 3});
  expect_bound_at_the_optimum(g, 240, 4);
}

// An input recomputed for a recomputation, in its stage or an earlier one with room for it:
// x -> c -> b -> d1 -> d2 -> loss, b a ReLU computed over c in place, and the gradient
// reads b and d2. With a budget of 280 B, stage 4 (d1 and d2, 120 B each) has no room
// for b (80 B), and the input x (120 B, free to load again) is absent too. Recomputing b
// (1 J) from c kept frees nothing, and c paged in costs 7 J; recomputed (2 J) from x it
// would make b cost 3 J, but no stage after b's last use before the gradient has room for
// x and c beside the tensors it needs (stage 5: d2; stage 6: d2 and the loss), so c would
// be recomputed no later than stage 3 and held instead of b. So b is paged (page-out
// 2.5 J + page-in 4.5 J): compute-once + 7 J, the optimum, where the cover without that
// check says + 3 J.
TEST(LowerBound, AnInputRecomputedEarlierIsHeldUntilItsReader) {
  using testing::add_hand_node;
  Graph g("input-recomputed-earlier");
  add_hand_node(g, "x", OpKind::Input, Role::Forward, 30, 0, {});
  add_hand_node(g, "c", OpKind::Conv2d, Role::Forward, 20, 4, {0});
  add_hand_node(g, "b", OpKind::ReLU, Role::Forward, 20, 2, {1});
  add_hand_node(g, "d1", OpKind::Conv2d, Role::Forward, 30, 4, {2});
  add_hand_node(g, "d2", OpKind::Conv2d, Role::Forward, 30, 4, {3});
  add_hand_node(g, "loss", OpKind::SoftmaxCrossEntropy, Role::Loss, 5, 2, {4});
  add_hand_node(g, "d_b", OpKind::ChainGradient, Role::Backward, 10, 8, {5, 2, 4});
  add_hand_node(g, "d_x", OpKind::ChainGradient, Role::Backward, 10, 8, {6, 0});
  ASSERT_TRUE(in_place_input(g, 2).has_value());
  expect_bound_at_the_optimum(g, 280, 7);
}

}  // namespace
}  // namespace poet
