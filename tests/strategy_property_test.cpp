// Properties of every strategy over thousands of seeded random DAGs of varied size, fan-in,
// fan-out and budget: each schedule a strategy returns is accepted by the simulator, fits
// the budget it was made for, and carries the simulator's own figures. Counts, not time,
// bound each test; the seeds are fixed, so a failure names a case that replays.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "poet/baselines/chen.h"
#include "poet/cost/device.h"
#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/simulate/simulator.h"
#include "poet/solve/solve.h"
#include "poet/strategy/strategy.h"
#include "random_graphs.h"
#include "test_scale.h"

namespace poet {
namespace {

// One random instance: a graph, a device and a budget between the least any schedule
// needs and checkpoint-all's peak (and a little beyond, where checkpoint-all fits).
struct Instance {
  Graph graph;
  GraphCosts costs;
  SimulationOptions options;
  std::string label;
};

Instance random_instance(std::mt19937& rng, int case_index, int max_nodes) {
  const int n = std::uniform_int_distribution<int>(2, max_nodes)(rng);
  testing::RandomDagShape shape;
  shape.max_fan_in = std::uniform_int_distribution<int>(1, 8)(rng);
  shape.skip_probability = std::uniform_real_distribution<double>(0, 1)(rng);
  shape.hub_probability = std::bernoulli_distribution(0.3)(rng) ? 0.5 : 0;
  shape.max_elements = std::bernoulli_distribution(0.2)(rng) ? 1 << 16 : 1024;
  Graph g = testing::random_graph(rng, n, shape);
  static const char* const platforms[] = {"m0", "m4", "a72", "jetsontx2"};
  const char* platform = platforms[std::uniform_int_distribution<int>(0, 3)(rng)];
  GraphCosts costs = estimate_costs(g, builtin_platform(platform));
  SimulationOptions options;
  options.count_gradients = std::bernoulli_distribution(0.3)(rng);
  options.optimizer = options.count_gradients ? Optimizer::Adam : Optimizer::SGD;
  const SimulationResult all = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g), options);
  const std::int64_t least = [&] {
    std::int64_t most = 0;  // the largest node with its inputs: no schedule needs less
    for (const Node& node : g.nodes()) {
      std::int64_t working = node.bytes;
      for (const NodeId in : node.inputs) working += g.node(in).bytes;
      most = std::max(most, working);
    }
    return all.fixed_bytes + most;
  }();
  const double fraction = std::uniform_real_distribution<double>(-0.05, 1.1)(rng);
  options.ram_budget_bytes =
      least + static_cast<std::int64_t>(fraction * static_cast<double>(std::max<std::int64_t>(all.peak_bytes - least, 0)));
  const std::string label = fmt::format("case {} ({} nodes, fan-in <= {}, skips {:.2f}, hubs {}, {}, budget {} B, {:.0f}% "
                                        "of the way from the least to checkpoint-all's {} B{})",
                                        case_index, n, shape.max_fan_in, shape.skip_probability,
                                        shape.hub_probability > 0, platform, *options.ram_budget_bytes,
                                        100 * fraction, all.peak_bytes,
                                        options.count_gradients ? ", gradients and Adam state counted" : "");
  return {std::move(g), std::move(costs), options, label};
}

// The simulator accepts `s` under the budget and reports the figures `claimed` holds.
void expect_valid_within_budget(const Instance& x, const Schedule& s, const std::optional<SimulationResult>& claimed,
                                const std::string& what) {
  SimulationResult judged;
  try {
    judged = simulate(x.graph, x.costs, plan_from_schedule(s, x.graph), x.options);
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " on " << x.label << ": the simulator rejects its schedule: " << e.what();
    return;
  }
  EXPECT_LE(judged.peak_bytes, *x.options.ram_budget_bytes) << what << " on " << x.label;
  if (!claimed) return;
  EXPECT_EQ(claimed->peak_activation_bytes, judged.peak_activation_bytes) << what << " on " << x.label;
  EXPECT_EQ(claimed->computes, judged.computes) << what << " on " << x.label;
  EXPECT_EQ(claimed->pageins, judged.pageins) << what << " on " << x.label;
  EXPECT_DOUBLE_EQ(claimed->total_energy_j(), judged.total_energy_j()) << what << " on " << x.label;
}

const int kBaselineCases = testing::test_cases(1000, 5);
const int kHeuristicCases = testing::test_cases(1000, 5);
const int kLargeHeuristicCases = testing::test_cases(20);  // of them, the last: up to 80 nodes

// Chen (sqrt and greedy), revolve, DTR, Capuchin and POFO, each picking its parameter for
// the budget: every schedule any of them returns is valid and fits.
TEST(StrategyProperty, EveryBaselineScheduleIsValidAndFitsItsBudget) {
  std::mt19937 rng(20261123);
  std::map<std::string, int> found;
  for (int c = 0; c < kBaselineCases; ++c) {
    const Instance x = random_instance(rng, c, c < kBaselineCases - 20 ? 30 : 80);
    for (const std::string& name : strategy_names(StrategyKind::Baseline)) {
      const StrategyResult r = schedule_for_budget(name, x.graph, x.costs, {.budget = x.options});
      if (!r.found()) continue;
      ++found[name];
      expect_valid_within_budget(x, *r.schedule, std::nullopt, name);
      if (::testing::Test::HasFailure()) return;  // one case's report is enough to replay it
    }
  }
  // A property that held over no schedule proves nothing: each baseline must have answered
  // in some cases (POFO, for chains, answers least often: in 33 of 1,000 cases).
  for (const std::string& name : strategy_names(StrategyKind::Baseline)) {
    EXPECT_GT(found[name], kBaselineCases / 100) << name << " found a schedule in only " << found[name] << " of "
                                                << kBaselineCases << " cases";
    std::cout << fmt::format("[ found    ] {}: {} of {} cases\n", name, found[name], kBaselineCases);
  }
}

// POET's solve without CBC (the eviction heuristic, with Capuchin and DTR as rivals): every
// schedule is valid, fits, carries the simulator's figures and costs at least the proven
// bound; and where checkpoint-all itself fits, a schedule is always found.
TEST(StrategyProperty, PoetHeuristicScheduleIsValidFitsAndRespectsItsBound) {
  std::mt19937 rng(20261124);
  int found = 0;
  for (int c = 0; c < kHeuristicCases; ++c) {
    const Instance x = random_instance(rng, c, c < kHeuristicCases - kLargeHeuristicCases ? 30 : 80);
    SolveOptions o;
    o.ram_budget_bytes = *x.options.ram_budget_bytes;
    o.count_gradients = x.options.count_gradients;
    o.optimizer = x.options.optimizer;
    o.heuristic_only = true;
    o.progress = false;
    const SolveResult r = solve(x.graph, x.costs, o);
    SimulationOptions unbounded = x.options;
    unbounded.ram_budget_bytes.reset();
    const SimulationResult all =
        simulate(x.graph, x.costs, plan_from_schedule(checkpoint_all_schedule(x.graph), x.graph), unbounded);
    if (all.peak_bytes <= o.ram_budget_bytes) {
      EXPECT_TRUE(r.schedule) << x.label << ": checkpoint-all fits, yet no schedule: " << r.message;
    }
    if (!r.schedule) continue;
    ++found;
    ASSERT_TRUE(r.simulation) << x.label;
    expect_valid_within_budget(x, *r.schedule, r.simulation, "poet --heuristic");
    EXPECT_GE(r.simulation->total_energy_j(), r.best_bound * (1 - 1e-9)) << x.label;
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(found, kHeuristicCases / 2);
  std::cout << fmt::format("[ found    ] poet --heuristic: {} of {} cases\n", found, kHeuristicCases);
}

// The strategies without a budget are valid on any DAG: checkpoint-all (each node computed
// once), Chen's sqrt(n) (each at least once), and checkpoint-all with random tensors paged
// out between uses (each once, and never a higher peak than checkpoint-all's).
TEST(StrategyProperty, FixedStrategiesAreValidOnAnyDag) {
  std::mt19937 rng(20261125);
  for (int c = 0; c < kBaselineCases; ++c) {
    Instance x = random_instance(rng, c, 60);
    x.options.ram_budget_bytes.reset();
    const auto judge = [&](const Schedule& s, const std::string& what) {
      const SimulationResult r = simulate(x.graph, x.costs, plan_from_schedule(s, x.graph), x.options);
      EXPECT_GE(r.computes, x.graph.size()) << what << " on " << x.label;
      return r;
    };
    const SimulationResult all = judge(checkpoint_all_schedule(x.graph), "checkpoint_all");
    EXPECT_EQ(all.computes, x.graph.size()) << x.label;
    judge(chen_sqrt_schedule(x.graph), "chen_sqrt");
    const SimulationResult paged =
        judge(testing::random_paging_schedule(rng, x.graph, 0.5), "random paging of checkpoint-all");
    EXPECT_EQ(paged.computes, x.graph.size()) << x.label;
    EXPECT_LE(paged.peak_activation_bytes, all.peak_activation_bytes) << x.label;
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace poet
