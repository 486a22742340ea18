// Chen et al.'s sqrt(n) and greedy recomputation, with the 16-node chain worked by hand.
#include "poet/baselines/chen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "poet/backward/backward.h"
#include "poet/baselines/articulation.h"
#include "poet/baselines/segments.h"
#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "hand_graph.h"
#include "random_graphs.h"
#include "simulated.h"

namespace poet {
namespace {

Node forward_node(const char* name, OpKind op, std::vector<NodeId> inputs, Role role = Role::Forward) {
  Node n;
  n.name = name;
  n.op = op;
  n.role = role;
  n.shape = {10};
  n.inputs = std::move(inputs);
  return n;
}

// in -> conv1 -> relu1 -> conv2 -> add(conv2, conv1) -> relu2 -> conv3 -> add(conv3, relu2) -> loss
Graph residual_forward_graph() {
  Graph g("residual");
  g.add(forward_node("in", OpKind::Input, {}));
  g.add(forward_node("conv1", OpKind::Conv2d, {0}));
  g.add(forward_node("relu1", OpKind::ReLU, {1}));
  g.add(forward_node("conv2", OpKind::Conv2d, {2}));
  g.add(forward_node("add1", OpKind::Add, {3, 1}));
  g.add(forward_node("relu2", OpKind::ReLU, {4}));
  g.add(forward_node("conv3", OpKind::Conv2d, {5}));
  g.add(forward_node("add2", OpKind::Add, {6, 5}));
  g.add(forward_node("loss", OpKind::SoftmaxCrossEntropy, {7}, Role::Loss));
  return g;
}

TEST(BaselineChen, SqrtOnSixteenNodeChainKeepsEveryFourthNodeAndRecomputesEachSegmentOnce) {
  const Graph g = testing::chain_training_graph(16);  // x0 .. x15 (loss), gradients at stages 16 .. 30
  // ceil(sqrt(16)) = 4: boundaries x4, x8, x12; x0 and the loss are kept anyway.
  EXPECT_EQ(chen_sqrt_boundaries(g), (std::vector<NodeId>{4, 8, 12}));
  const Schedule s = chen_sqrt_schedule(g);
  // Gradient k (stage 16 + k) reads x(14-k) and x(15-k). The first read inside a segment
  // recomputes the segment's interior: stage 16 reads x14 -> x13, x14; stage 19 reads x11
  // -> x9..x11; stage 23 reads x7 -> x5..x7; stage 27 reads x3 -> x1..x3.
  const std::map<std::size_t, SparseRow> recomputed = {
      {16, {13, 14}}, {19, {9, 10, 11}}, {23, {5, 6, 7}}, {27, {1, 2, 3}}};
  for (std::size_t t = 0; t < g.size(); ++t) {
    SparseRow expected = recomputed.contains(t) ? recomputed.at(t) : SparseRow{};
    expected.push_back(static_cast<NodeId>(t));
    EXPECT_EQ(s.R.row(t), expected) << "stage " << t;
  }
  const SimulationResult r = testing::simulate_on_hand_device(g, s);
  EXPECT_EQ(r.recomputes, 11u);  // 16 forward nodes less the 5 kept
  EXPECT_EQ(r.computes, g.size() + 11);
  // Kept x8 is in RAM from its forward stage until gradient 7 (stage 23) reads it last.
  EXPECT_TRUE(s.S_ram.get(9, 8));
  EXPECT_TRUE(s.S_ram.get(23, 8));
  EXPECT_FALSE(s.S_ram.get(24, 8));
  // x6 is dropped after the forward (its last forward read is stage 7) until recomputed.
  EXPECT_FALSE(s.S_ram.get(8, 6));
}

TEST(BaselineChen, ArticulationPointsOfASmallResidualGraph) {
  const Graph g = residual_forward_graph();
  // conv1 cuts off the input; add1 and relu2 lie between the two blocks; add2 cuts off the
  // loss. relu1, conv2 and conv3 sit on a cycle through a skip connection.
  EXPECT_EQ(forward_articulation_points(g), (std::vector<NodeId>{1, 4, 5, 7}));
  EXPECT_EQ(segment_boundary_candidates(g), (std::vector<NodeId>{1, 4, 5, 7}));
}

TEST(BaselineChen, ArticulationPointSkippedByALateSideBranchIsNoBoundary) {
  Graph g("side_branch");
  g.add(forward_node("in", OpKind::Input, {}));
  g.add(forward_node("a", OpKind::ReLU, {0}));
  g.add(forward_node("b", OpKind::ReLU, {1}));
  g.add(forward_node("c", OpKind::ReLU, {2}));
  g.add(forward_node("side", OpKind::ReLU, {1}));  // placed after c, reads a
  g.add(forward_node("loss", OpKind::SoftmaxCrossEntropy, {3}, Role::Loss));
  EXPECT_EQ(forward_articulation_points(g), (std::vector<NodeId>{1, 2, 3}));
  // Recomputing "after b" would need a for `side`, so only a separates the order.
  EXPECT_EQ(segment_boundary_candidates(g), (std::vector<NodeId>{1}));
}

TEST(BaselineChen, ResNetBoundariesAreArticulationPointsAndTheScheduleValidates) {
  const Graph g = build_model_training_graph("resnet18_cifar", {}, BackwardMode::Autodiff);
  const auto candidates = segment_boundary_candidates(g);
  const auto points = forward_articulation_points(g);
  for (NodeId b : chen_sqrt_boundaries(g)) {
    EXPECT_TRUE(std::binary_search(candidates.begin(), candidates.end(), b)) << b;
    EXPECT_TRUE(std::binary_search(points.begin(), points.end(), b)) << b;
  }
  EXPECT_FALSE(chen_sqrt_boundaries(g).empty());
  const SimulationResult chen = testing::simulate_on_hand_device(g, chen_sqrt_schedule(g));
  const SimulationResult all = testing::simulate_on_hand_device(g, checkpoint_all_schedule(g));
  EXPECT_LT(chen.peak_activation_bytes, all.peak_activation_bytes);
  EXPECT_GT(chen.recomputes, 0u);
}

TEST(BaselineChen, SqrtPeakIsBelowCheckpointAllOnALongChain) {
  const Graph g = testing::chain_training_graph(100);
  const SimulationResult chen = testing::simulate_on_hand_device(g, chen_sqrt_schedule(g));
  const SimulationResult all = testing::simulate_on_hand_device(g, checkpoint_all_schedule(g));
  EXPECT_LT(chen.peak_activation_bytes, all.peak_activation_bytes / 3);
  EXPECT_LE(chen.recomputes, 100u);  // each forward node at most once more
}

TEST(BaselineChen, EveryScheduleValidatesOnRandomGraphs) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    const Graph g = testing::random_graph(rng, 12 + trial);
    const auto costs = estimate_costs(g, testing::hand_device());
    EXPECT_NO_THROW(testing::simulate_on_hand_device(g, chen_sqrt_schedule(g))) << "trial " << trial;
    for (std::int64_t b : {0, 1000, 10000, 1000000}) {
      const Schedule s = segment_recompute_schedule(g, chen_greedy_boundaries(g, b), "chen_greedy");
      EXPECT_NO_THROW(testing::simulate_on_hand_device(g, s)) << "trial " << trial << " b " << b;
    }
    const BaselineResult greedy = chen_greedy_for_budget(g, costs, {});
    ASSERT_TRUE(greedy.found()) << greedy.reason;
    // Unconstrained, keeping every candidate (b = 0) recomputes least; on a DAG the nodes
    // between articulation points are still recomputed.
    const Schedule every_candidate = segment_recompute_schedule(g, segment_boundary_candidates(g), "chen_greedy");
    EXPECT_EQ(greedy.simulation->recomputes, testing::simulate_on_hand_device(g, every_candidate).recomputes)
        << "trial " << trial;
  }
}

TEST(BaselineChen, GreedyFindsNothingBelowTheLargestNodeFootprint) {
  const Graph g = testing::chain_training_graph(16);
  const auto costs = estimate_costs(g, testing::hand_device());
  // Every tensor is 40 B. The largest footprint is a gradient after the first with its
  // three inputs (two activations and the previous gradient): 4 x 40 = 160 B.
  EXPECT_EQ(chen_greedy_for_budget(g, costs, {.ram_budget_bytes = 160}).reason.find("no schedule fits"),
            std::string::npos);
  const BaselineResult none = chen_greedy_for_budget(g, costs, {.ram_budget_bytes = 159});
  EXPECT_FALSE(none.found());
  EXPECT_NE(none.reason.find("no schedule fits"), std::string::npos) << none.reason;
  EXPECT_FALSE(chen_sqrt_for_budget(g, costs, {.ram_budget_bytes = 159}).found());
}

TEST(BaselineChen, GreedyTradesComputeForMemoryAsTheBudgetShrinks) {
  const Graph g = testing::chain_training_graph(40);
  const auto costs = estimate_costs(g, testing::hand_device());
  const std::int64_t all_peak = testing::simulate_on_hand_device(g, checkpoint_all_schedule(g)).peak_bytes;
  const BaselineResult roomy = chen_greedy_for_budget(g, costs, {.ram_budget_bytes = all_peak});
  ASSERT_TRUE(roomy.found()) << roomy.reason;
  EXPECT_EQ(roomy.simulation->recomputes, 0u);
  const std::int64_t sqrt_peak = testing::simulate_on_hand_device(g, chen_sqrt_schedule(g)).peak_bytes;
  const BaselineResult tight = chen_greedy_for_budget(g, costs, {.ram_budget_bytes = sqrt_peak});
  ASSERT_TRUE(tight.found()) << tight.reason;
  EXPECT_LE(tight.simulation->peak_bytes, sqrt_peak);
  EXPECT_GT(tight.simulation->recomputes, 0u);
  EXPECT_LE(tight.simulation->compute_time_s,
            testing::simulate_on_hand_device(g, chen_sqrt_schedule(g)).compute_time_s);
  EXPECT_NO_THROW(simulate(g, costs, plan_from_schedule(*tight.schedule, g), {.ram_budget_bytes = sqrt_peak}));
}

}  // namespace
}  // namespace poet
