// A device profile measured on this machine for one training graph: what `poet profile`
// writes. Compute time per node (profiling.h), storage latency and throughput fitted to
// page-outs and page-ins of the graph's tensor sizes, and energy from the CPU's energy
// counter where it can be read, else from the power figures the caller gives.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "poet/cost/device.h"
#include "poet/graph/graph.h"
#include "poet/profile/profiling.h"

namespace poet::profile {

struct MeasureOptions {
  std::string name;  // of the profile
  NodeTimingOptions nodes;
  StorageTimingOptions storage;
  bool use_rapl = true;                    // false: energy from cpu_power_w even if RAPL is readable
  std::optional<double> cpu_power_w;       // W while computing; required without RAPL
  std::optional<double> storage_power_w;   // W while paging; required (nothing meters storage)
};

// Throws InputError before measuring anything if the graph cannot run or a power figure
// that is needed is missing (naming the option to give); IoError if the page file cannot
// be made. `log` receives progress lines.
DeviceProfile measure_device(const Graph& g, const MeasureOptions& options,
                             const std::function<void(std::string_view)>& log = {});

// "OMP_NUM_THREADS=N" or that it is unset: the kernels' threads a profile is measured with.
// They decide what a transfer takes from the compute (DeviceProfile::paging_cpu_*): with
// a core left free the I/O thread took 0-0.6 us a transfer on the 2-core VM, with both
// computing 6-15 us + 25-75 us/MiB (docs/BENCHMARKS.md).
std::string blas_threads();

// The compute threads the kernels run on in this process: OpenMP's (OMP_NUM_THREADS, else
// one per core).
int compute_threads();

// Empty unless `device` (the profile given as `platform`) recorded the threads its kernels
// were timed on and this process has another number; then a note saying so and what to do:
// its node times and paging charge are not this run's.
std::string thread_mismatch_note(const DeviceProfile& device, std::string_view platform);

// "host, CPU model, N cores, kernel, date": where a profile was measured.
std::string describe_this_machine();

}  // namespace poet::profile
