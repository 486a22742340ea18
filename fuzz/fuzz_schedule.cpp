// A schedule JSON file (`poet simulate --schedule FILE`): loaded, checked against LeNet-5's
// training graph (load_schedule holds it to the graph), lowered to a plan and simulated, as `poet simulate` does.
#include "fuzz_support.h"
#include "poet/plan/plan.h"
#include "poet/schedule/schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return poet::fuzz::expect_value_or_input_error([&] {
    const poet::Graph& g = poet::fuzz::lenet5_graph();
    const poet::Schedule s = poet::load_schedule(poet::fuzz::scratch_file_with({data, size}), g);
    poet::simulate(g, poet::fuzz::lenet5_costs(), poet::plan_from_schedule(s, g));
  });
}
