// A device profile JSON file (`--platform FILE`), with the reference's constants only:
// loaded as the CLI loads it, then LeNet-5 costed on it and simulated under checkpoint-all.
// (fuzz_measured_profile.cpp fuzzes the same loader from profiles with measured costs.)
#include "fuzz_support.h"
#include "poet/cost/device.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return poet::fuzz::expect_value_or_input_error([&] {
    const poet::DeviceProfile device = poet::resolve_device(poet::fuzz::scratch_file_with({data, size}));
    const poet::Graph& g = poet::fuzz::lenet5_graph();
    poet::fuzz::simulate_checkpoint_all(g, poet::costs_for(g, device));
  });
}
