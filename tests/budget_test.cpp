#include "poet/budget/budget.h"

#include <gtest/gtest.h>

#include "poet/backward/backward.h"
#include "poet/cost/device.h"
#include "poet/util/error.h"

namespace poet {
namespace {

Graph lenet() { return build_model_training_graph("lenet5", {.batch_size = 4}, BackwardMode::Autodiff); }

TEST(Budget, APercentIsOfTheActivationPeakOnTopOfTheFixedMemory) {
  const Graph g = lenet();
  const GraphCosts costs = estimate_costs(g, builtin_platform("m4"));
  const BudgetScale strict = budget_scale(g, costs, {});
  EXPECT_EQ(strict.fixed_bytes, g.fixed_memory().parameter_bytes);
  ASSERT_GT(strict.activation_peak_bytes, 0);
  EXPECT_EQ(strict.bytes_at(100), strict.fixed_bytes + strict.activation_peak_bytes);
  EXPECT_EQ(strict.bytes_at(0), strict.fixed_bytes);
  // Within the byte bytes_at rounds down to.
  EXPECT_NEAR(strict.percent_of(strict.bytes_at(70)), 70, 100.0 / static_cast<double>(strict.activation_peak_bytes));
  EXPECT_EQ(parse_ram_budget("70%", strict), strict.bytes_at(70));
  EXPECT_EQ(parse_ram_budget("2MB", strict), 2'000'000);

  const BudgetScale reference = budget_scale(g, costs, {.count_parameters = false});
  EXPECT_EQ(reference.fixed_bytes, 0);
  EXPECT_EQ(reference.activation_peak_bytes, strict.activation_peak_bytes);
}

TEST(Budget, BadTextNamesTheOptionAndItsForms) {
  const BudgetScale scale{100, 1000};
  for (const char* bad : {"", "lots", "-5%", "12XB"}) {
    try {
      parse_ram_budget(bad, scale, "--budgets");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--budgets"), std::string::npos) << e.what();
    }
  }
}

// A bare fraction was taken as a byte count (0.5 became 1 B), and 0 as a budget of 0 B.
TEST(Budget, AFractionOfAByteOrNoBytesIsRefusedWithTheFormMeant) {
  const BudgetScale scale{100, 1000};
  const auto message = [&](const char* text) {
    try {
      parse_ram_budget(text, scale, "--ram-budget");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("0.5").find("not a whole number of bytes; for a share of the activation peak write a percent, "
                                "e.g. 50%"),
            std::string::npos)
      << message("0.5");
  EXPECT_NE(message("1500.5").find("not a whole number of bytes"), std::string::npos);
  EXPECT_NE(message("0").find("a budget of 0 B holds nothing"), std::string::npos);
  EXPECT_NE(message("0KB").find("a budget of 0 B holds nothing"), std::string::npos);
  EXPECT_EQ(message(" "), "--ram-budget is empty; give bytes (3000000, 3MB) or a percent (70%)");
  EXPECT_EQ(parse_ram_budget("2.5KiB", scale), 2560);
  EXPECT_EQ(parse_ram_budget("1e6", scale), 1'000'000);
}

TEST(Budget, TheFloorIsTheLargestFootprintAndTheFixedMemoryCounted) {
  const Graph g = lenet();
  const Graph::Footprint largest = g.largest_footprint();
  const BudgetFloor reference = smallest_workable_budget(g, {.count_parameters = false});
  EXPECT_EQ(reference.bytes, largest.bytes);
  EXPECT_EQ(reference.node, largest.node);
  const FixedMemory adam = g.fixed_memory(Optimizer::Adam);
  const SimulationOptions everything{.count_gradients = true, .optimizer = Optimizer::Adam};
  EXPECT_EQ(counted_fixed_bytes(g, everything), adam.parameter_bytes + adam.gradient_bytes + adam.optimizer_state_bytes);
  EXPECT_EQ(smallest_workable_budget(g, everything).bytes, largest.bytes + counted_fixed_bytes(g, everything));
}

}  // namespace
}  // namespace poet
