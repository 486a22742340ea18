// A RAM budget string (`--ram-budget`): bytes with a unit (parse_bytes, the units parser)
// or a percent of LeNet-5's checkpoint-all peak (budget.h's parse_ram_budget); and the same
// text as one of sweep's ranges of budgets or deadlines (parse_range).
#include <string>

#include "fuzz_support.h"
#include "poet/budget/budget.h"
#include "poet/sweep/sweep_range.h"
#include "poet/util/units.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  poet::fuzz::expect_value_or_input_error([&] { poet::parse_bytes(text, "--ram-budget"); });
  poet::fuzz::expect_value_or_input_error([&] { poet::parse_range(text, "--budgets", "%"); });
  poet::fuzz::expect_value_or_input_error([&] { poet::parse_range(text, "--ablation-deadlines", ""); });
  static const poet::BudgetScale lenet5 = poet::budget_scale(poet::fuzz::lenet5_graph(), poet::fuzz::lenet5_costs(), {});
  return poet::fuzz::expect_value_or_input_error([&] { poet::parse_ram_budget(text, lenet5); });
}
