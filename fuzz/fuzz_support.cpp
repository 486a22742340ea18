#include "fuzz_support.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "poet/backward/backward.h"
#include "poet/cost/device.h"
#include "poet/paging/checksum.h"
#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"

namespace poet::fuzz {

const std::string& scratch_file_with(std::span<const std::uint8_t> bytes) {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return fmt::format("{}/poet-fuzz-{}.input", dir && *dir ? dir : "/tmp", getpid());
  }();
  // Removed at exit, so that runs leave nothing behind in the temporary folder.
  static const int registered = std::atexit([] { std::remove(path.c_str()); });
  (void)registered;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write the scratch file %s: %s\n", path.c_str(), std::strerror(errno));
    std::abort();
  }
  return path;
}

std::vector<std::uint8_t> with_crc_trailer_fixed(std::span<const std::uint8_t> bytes) {
  std::vector<std::uint8_t> out(bytes.begin(), bytes.end());
  if (out.size() < 4) return out;
  const std::uint32_t crc = paging::crc32_of(std::as_bytes(std::span(out).first(out.size() - 4)));
  for (std::size_t i = 0; i < 4; ++i) out[out.size() - 4 + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  return out;
}

const Graph& lenet5_graph() {
  static const Graph g = build_model_training_graph("lenet5", {.batch_size = 1}, BackwardMode::Autodiff);
  return g;
}

const GraphCosts& lenet5_costs() {
  static const GraphCosts costs = costs_for(lenet5_graph(), builtin_platform("m4"));
  return costs;
}

SimulationResult simulate_checkpoint_all(const Graph& g, const GraphCosts& costs) {
  return simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g));
}

}  // namespace poet::fuzz
