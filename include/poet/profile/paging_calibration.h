// What paging costs a real training step, measured by running one: the last part of
// `poet profile`. The storage phase times what a transfer takes from a compute load beside
// it (profiling.h); a step's own transfers cost it more. On resnet18_cifar at 2 threads,
// with that charge, Capuchin's plans ran 9-11% over their prediction and lenet5's 6-8%, while
// plans without transfers were within 4% (docs/BENCHMARKS.md, twentieth session): the
// I/O thread, woken between kernels, preempts a compute thread and the other waits for it at
// the next barrier, and its copies evict the step's tensors from the caches.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "poet/cost/device.h"
#include "poet/graph/graph.h"
#include "poet/profile/profiling.h"

namespace poet::profile {

// The budgets, in percent of the compute-once activation peak, tried in turn for the plan
// that calibrates: the first where Capuchin makes a schedule that pages. 60% is not one of
// the budgets bench/train_bench.cpp checks the prediction at for resnet18_cifar (70%, 50%).
inline constexpr double kCalibrationBudgetsPercent[] = {60, 80, 90, 95};

struct PagingCalibration {
  std::string plan;         // which plan ran, e.g. "Capuchin at 60% of the activation peak"
  int transfers = 0;        // page-outs and page-ins a step
  std::int64_t bytes = 0;   // moved a step, both ways
  int pairs = 0;            // timed pairs of steps
  double measured_extra_s = 0;   // median over paired steps of (paging step - checkpoint-all step)
  double predicted_extra_s = 0;  // the simulator's, with the charge the storage phase measured
  double charged_s = 0;          // of which that charge (SimulationResult::paging_cpu_s)
  double scale = 1;              // DeviceProfile::paging_charge_scale (charge_scale)
};

// The factor that makes the simulator's charge account for the whole measured difference:
// (measured - (predicted - charged)) / charged, from 0 to kMaxPagingChargeScale (beyond
// it, the storage phase measured next to no charge: a profile must still be written). 1
// where nothing was charged.
double charge_scale(double measured_extra_s, double predicted_extra_s, double charged_s);

// Plans `device` (nodes, storage and charge measured; its paging_charge_scale taken as 1)
// with Capuchin at the first budget of kCalibrationBudgetsPercent where it pages, lowers
// that plan and checkpoint-all's, and times `options.warmup` then `options.repeats` pairs
// of turns (kStepsPerTurn) of real steps of the two through the runtime, the paging one
// with a FilePager in storage.directory. Nothing if no such plan exists (a graph too small
// to page). Throws IoError if the page file cannot be made. `progress` is called after
// each timed pair with (pairs done, pairs).
std::optional<PagingCalibration> calibrate_paging_charge(const Graph& g, const DeviceProfile& device,
                                                         const NodeTimingOptions& options,
                                                         const StorageTimingOptions& storage,
                                                         const std::function<void(int, int)>& progress = {});

}  // namespace poet::profile
