// A device profile JSON file that carries measured per-node and storage costs (what `poet
// profile` writes): loaded as the CLI loads it, then matched against the graph it was
// measured for and simulated under checkpoint-all with those costs. The seed is
// docs/profiles/lenet5.json, measured for LeNet-5 at batch 32.
#include "fuzz_support.h"
#include "poet/backward/backward.h"
#include "poet/cost/device.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return poet::fuzz::expect_value_or_input_error([&] {
    const poet::DeviceProfile device = poet::resolve_device(poet::fuzz::scratch_file_with({data, size}));
    static const poet::Graph g =
        poet::build_model_training_graph("lenet5", {.batch_size = 32}, poet::BackwardMode::Autodiff);
    poet::fuzz::simulate_checkpoint_all(g, poet::costs_for(g, device));
  });
}
