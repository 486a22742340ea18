// whole_model_columns: solve() decides from this count, made from the graph alone, whether
// CBC could take the whole model within the limit, before it spends the time to build it.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "../src/solve/milp_model.h"
#include "poet/backward/backward.h"
#include "random_graphs.h"

namespace poet {
namespace {

std::int64_t built_columns(const Graph& g, SolveMode mode) {
  const GraphCosts costs = estimate_costs(g, builtin_platform("a72"));
  SolveOptions o;
  o.mode = mode;
  return solve_internal::MilpModel(g, costs, o, std::int64_t{1} << 40).columns();
}

TEST(MilpColumns, TheCountFromTheGraphIsTheBuiltModelsOnZooModels) {
  for (const char* model : {"linear", "lenet5", "resnet18_cifar", "transformer"})
    for (const BackwardMode backward : {BackwardMode::Chain, BackwardMode::Autodiff}) {
      const Graph g = build_model_training_graph(model, {}, backward);
      EXPECT_EQ(solve_internal::whole_model_columns(g), built_columns(g, SolveMode::RematAndPaging)) << model;
    }
}

// Columns fixed to zero (remat or paging off) are columns still; a repeated input is one
// edge, however often it is read (random graphs repeat inputs, up to 4 times).
TEST(MilpColumns, TheCountHoldsForEveryModeAndForRepeatedInputs) {
  std::mt19937 rng(7);
  int repeats = 0;
  for (int c = 0; c < 20; ++c) {
    const Graph g = testing::random_graph(rng, std::uniform_int_distribution<int>(2, 40)(rng), {.max_fan_in = 6});
    for (const Node& n : g.nodes())
      for (std::size_t k = 1; k < n.inputs.size(); ++k)
        repeats += std::count(n.inputs.begin(), n.inputs.begin() + static_cast<std::ptrdiff_t>(k), n.inputs[k]) > 0;
    for (const SolveMode mode : {SolveMode::RematAndPaging, SolveMode::RematOnly, SolveMode::PagingOnly})
      EXPECT_EQ(solve_internal::whole_model_columns(g), built_columns(g, mode)) << "case " << c;
  }
  EXPECT_GT(repeats, 0) << "some graph repeats an input";
}

}  // namespace
}  // namespace poet
