// A plan text file (`poet simulate --plan FILE`): parsed against LeNet-5's training graph
// and simulated, as `poet simulate` does.
#include <string_view>

#include "fuzz_support.h"
#include "poet/plan/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return poet::fuzz::expect_value_or_input_error([&] {
    const poet::Graph& g = poet::fuzz::lenet5_graph();
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    poet::simulate(g, poet::fuzz::lenet5_costs(), poet::plan_from_text(text, g, "fuzz.plan"));
  });
}
