// The executor's value preservation over random trainable networks: on each seeded random
// DAG of real operators (linear layers, activations, dropout, layer norm, residual adds
// with long skips), one training step under every strategy's plan - Chen's sqrt(n),
// revolve, POET's heuristic at several budgets, random paging - gives checkpoint-all's
// loss, gradients, weights and optimizer state bit for bit. executor_identity_test.cpp
// does the same on the zoo's models.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "executor_harness.h"
#include "random_graphs.h"
#include "test_scale.h"

namespace poet::testing {
namespace {

// A random residual network on [batch, width] activations: node i reads node i-1 and, for
// an add, one earlier node (any, with long skips), so every node feeds the loss and early
// nodes fan out. Ends in a linear layer to `classes` and the softmax cross-entropy loss.
Graph random_trainable_graph(std::mt19937& rng, int layers, std::int64_t batch, std::int64_t width) {
  Graph f("random_trainable");
  const std::int64_t classes = 4;
  std::vector<NodeId> nodes = {add_forward_node(f, "input", OpKind::Input, {batch, width}, {})};
  static const OpKind ops[] = {OpKind::Linear, OpKind::Add,  OpKind::ReLU,    OpKind::Tanh,
                               OpKind::GELU,   OpKind::Dropout, OpKind::LayerNorm, OpKind::Sigmoid};
  for (int i = 1; i <= layers; ++i) {
    const OpKind op = ops[std::uniform_int_distribution<int>(0, std::size(ops) - 1)(rng)];
    const NodeId previous = nodes.back();
    std::vector<NodeId> in = {previous};
    if (op == OpKind::Add) in.push_back(nodes[std::uniform_int_distribution<std::size_t>(0, nodes.size() - 1)(rng)]);
    const std::int64_t params = op == OpKind::Linear ? (width + 1) * width : op == OpKind::LayerNorm ? 2 * width : 0;
    const std::string name = fmt::format("{}{}", op_name(op), i);
    nodes.push_back(add_forward_node(f, name.c_str(), op, {batch, width}, std::move(in), params));
  }
  const NodeId logits = add_forward_node(f, "logits", OpKind::Linear, {batch, classes}, {nodes.back()},
                                         (width + 1) * classes);
  add_forward_node(f, "loss", OpKind::SoftmaxCrossEntropy, {batch, classes}, {logits}, 0, Role::Loss);
  return build_autodiff_backward(f);
}

std::int64_t least_feasible_budget(const Graph& g) {
  SolveOptions o;
  o.heuristic_only = true;
  o.progress = false;
  return solve(g, test_costs(g), o).smallest_feasible_budget.value_or(0);
}

const int kGraphs = testing::test_cases(100);

TEST(ExecutorProperty, EveryStrategyMatchesCheckpointAllBitForBitOnRandomNetworks) {
  std::mt19937 rng(20261126);
  int plans = 0, recomputing = 0, paging = 0;
  for (int c = 0; c < kGraphs; ++c) {
    const int layers = std::uniform_int_distribution<int>(2, 14)(rng);
    const std::int64_t batch = std::uniform_int_distribution<int>(1, 3)(rng);
    const std::int64_t width = std::uniform_int_distribution<int>(2, 12)(rng);
    const Graph g = random_trainable_graph(rng, layers, batch, width);
    const std::string label = fmt::format("case {} ({} layers, batch {}, width {})", c, layers, batch, width);
    runtime::ExecutorOptions options;
    options.seed = static_cast<std::uint64_t>(c);
    options.optimizer.kind = c % 3 == 0 ? Optimizer::Adam : c % 3 == 1 ? Optimizer::Momentum : Optimizer::SGD;
    const Snapshot expected = one_step(g, executable(g, checkpoint_all_schedule(g)), options);

    std::vector<std::pair<std::string, Schedule>> schedules;
    schedules.emplace_back("chen_sqrt", chen_sqrt_schedule(g));
    if (BaselineResult r = revolve_schedule(g, 2); r.found()) schedules.emplace_back("revolve(2)", *r.schedule);
    schedules.emplace_back("random paging", random_paging_schedule(rng, g, 0.7));
    const std::int64_t least = least_feasible_budget(g);
    const std::int64_t peak =
        simulate(g, test_costs(g), plan_from_schedule(checkpoint_all_schedule(g), g)).peak_bytes;
    for (const double fraction : {0.0, 0.3, 0.7}) {
      SolveOptions o;
      o.ram_budget_bytes = least + static_cast<std::int64_t>(fraction * static_cast<double>(peak - least));
      o.heuristic_only = true;
      o.progress = false;
      if (SolveResult r = solve(g, test_costs(g), o); r.schedule)
        schedules.emplace_back(fmt::format("poet heuristic at {:.0f}%", 100 * fraction), *r.schedule);
    }
    for (const auto& [name, schedule] : schedules) {
      const std::string what = label + " " + name;
      try {
        LoweredPlan plan = executable(g, schedule);
        std::size_t computes = 0, pageins = 0;
        for (const Instruction& i : plan.plan.instructions) {
          computes += i.kind == InstrKind::Compute;
          pageins += i.kind == InstrKind::PageIn;
        }
        ++plans;
        recomputing += computes > g.size();
        paging += pageins > 0;
        expect_bit_identical(expected, one_step(g, std::move(plan), options), what);
      } catch (const std::exception& e) {
        ADD_FAILURE() << what << ": " << e.what();
      }
    }
    if (::testing::Test::HasFailure()) return;  // one case is enough to replay
  }
  std::cout << fmt::format("[ plans    ] {} plans on {} random networks: {} recompute, {} page\n", plans, kGraphs,
                           recomputing, paging);
  // The identity must have been tried on plans that really recompute and really page.
  EXPECT_GT(recomputing, kGraphs / 2);
  EXPECT_GT(paging, kGraphs / 2);
}

}  // namespace
}  // namespace poet::testing
