// The one judge of every plan: validity, peak memory, energy and time.
//
// Timing model: compute runs on the CPU one node at a time in plan order; paging runs on
// its own DMA channel in parallel with compute, one transfer at a time on the bus, started
// in plan order. A compute waits for its inputs' page-ins to finish (stall time), and
// under a RAM budget also for page-outs in flight whose RAM it needs.
// Memory model: fixed memory is always resident; a computed tensor occupies RAM from the
// start of its compute; a page-in occupies RAM from the start of its transfer; a freed
// tensor releases RAM at once, unless it is being paged out, in which case it releases RAM
// when that transfer ends. A compute in place (op_table.h's in_place_input, where the plan
// frees that input before its next compute with no page-out of it in between) takes its
// input's bytes as it starts, after any page-out of them has ended: it needs none of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/plan/buffer_life.h"
#include "poet/plan/plan.h"
#include "poet/util/error.h"

namespace poet {

struct SimulationOptions {
  std::optional<std::int64_t> ram_budget_bytes = std::nullopt;  // none: unconstrained
  bool count_gradients = false;                  // fixed memory holds gradients too
  Optimizer optimizer = Optimizer::SGD;          // optimizer state (with count_gradients)
  bool count_parameters = true;
};

// The fixed memory (parameters; with count_gradients also gradients and optimizer state)
// that `options` counts against the budget: the bytes always resident besides activations.
std::int64_t counted_fixed_bytes(const Graph& g, const SimulationOptions& options);

struct MemoryPoint {
  double time_s;
  std::int64_t bytes;  // activations resident or in transfer, after this event
};

struct SimulationResult {
  std::int64_t fixed_bytes = 0;
  std::int64_t peak_activation_bytes = 0;
  std::int64_t peak_bytes = 0;  // fixed + activations
  std::size_t peak_instruction = 0;
  double compute_energy_j = 0, pagein_energy_j = 0, pageout_energy_j = 0;
  double total_energy_j() const { return compute_energy_j + pagein_energy_j + pageout_energy_j; }
  double paging_energy_j() const { return pagein_energy_j + pageout_energy_j; }
  double compute_time_s = 0;  // sum of compute times (recomputation included)
  double makespan_s = 0;      // with paging overlapped on the DMA channel
  double stall_s = 0;         // CPU time spent waiting for transfers
  double paging_cpu_s = 0;    // step time the transfers cost beyond the bus: NodeCost::paging_cpu_s + paging_overhead_s
  double paging_overhead_s = 0;  // of which added to the makespan after the plan (NodeCost::paging_overhead_s)
  double transfer_time_s = 0;  // the transfers' durations, summed: the time the bus is busy
  std::size_t computes = 0;    // compute instructions, recomputations included
  std::size_t recomputes = 0;  // computes of a node computed before
  std::size_t pageins = 0, pageouts = 0;
  std::vector<MemoryPoint> timeline;
  std::vector<BufferLife> buffers;  // in order of creation
};

// Throws InvalidPlan (an InputError) naming the instruction index, the tensor and the
// reason, e.g. "instruction 12 (compute 'fc2' (5)): input 'relu1' (4) is not in RAM: freed
// by instruction 9".
class InvalidPlan : public InputError {
 public:
  using InputError::InputError;
  InvalidPlan(const std::string& message, std::size_t instruction) : InputError(message), instruction(instruction) {}
  std::optional<std::size_t> instruction;  // the illegal instruction, if one is to blame
};

SimulationResult simulate(const Graph& g, const GraphCosts& costs, const Plan& plan,
                          const SimulationOptions& options = {});

// The plan judged against options' budget without throwing for the budget: the simulation
// under the budget where the plan fits it, else the one under the least budget it fits,
// whose peak says by how much it misses (compare peak_bytes with the budget). That least
// budget is found by bisection, as a plan needs less where its computes wait for page-outs
// to end than where nothing waits (the budget's peak without a budget). Other invalidity
// throws InvalidPlan.
SimulationResult simulate_for_budget(const Graph& g, const GraphCosts& costs, const Plan& plan,
                                     const SimulationOptions& options);

}  // namespace poet
