// A training graph JSON file (`poet ... --graph FILE`): loaded as the CLI loads it, then
// costed on a built-in platform and simulated under checkpoint-all, as `poet simulate
// --graph FILE` does, so that accepted values are carried through the cost model and the
// simulator too.
#include "fuzz_support.h"
#include "poet/cost/device.h"
#include "poet/graph/graph_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return poet::fuzz::expect_value_or_input_error([&] {
    const poet::Graph g = poet::load_graph(poet::fuzz::scratch_file_with({data, size}));
    poet::fuzz::simulate_checkpoint_all(g, poet::costs_for(g, poet::builtin_platform("m4")));
  });
}
