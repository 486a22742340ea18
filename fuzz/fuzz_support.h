// What every fuzz target shares: the verdict on one input, the bytes as a file for the
// loaders that read a path (as the CLI does), and the small model the loaded files are
// checked against.
//
// The contract under test: a loader either returns a value or throws InputError (or one of
// its subclasses, e.g. InvalidPlan) whose message names the input. Anything else - another
// exception, a crash, a sanitizer report, a leak, a timeout, running out of memory - is a
// finding; libFuzzer stops on it and writes the input as crash-*, leak-*, timeout-* or
// oom-*.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/simulate/simulator.h"
#include "poet/util/error.h"

namespace poet::fuzz {

// Runs `load` on one input; bad input must end in InputError. Other exceptions escape to
// libFuzzer, which reports them as a crash ("deadly signal" after std::terminate).
template <typename Load>
int expect_value_or_input_error(Load&& load) {
  try {
    load();
  } catch (const InputError&) {
  }
  return 0;
}

// Writes `bytes` to this process's scratch file (in $TMPDIR, or /tmp) and returns its path:
// the loaders that take a path are fuzzed through the very function the CLI calls.
const std::string& scratch_file_with(std::span<const std::uint8_t> bytes);

// The bytes with their last 4 replaced by the CRC-32 of the rest, little-endian (the trailer
// of the device plan, and of the checkpoint on a little-endian host), so that mutations reach the fields behind the checksum.
std::vector<std::uint8_t> with_crc_trailer_fixed(std::span<const std::uint8_t> bytes);

// LeNet-5's training graph (autodiff backward, batch 1) and its costs on the m4 platform,
// built once: the graph the schedules, plans and profiles of the seed corpora were made for.
const Graph& lenet5_graph();
const GraphCosts& lenet5_costs();

// Simulates checkpoint-all's plan on `g` with `costs`: what `poet simulate` does with a
// loaded graph or device, so that values the loader accepts are also carried through.
SimulationResult simulate_checkpoint_all(const Graph& g, const GraphCosts& costs);

}  // namespace poet::fuzz
