// Device profiles: the constants of the reference's FLOP-based cost model.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "poet/cost/measured_profile.h"

namespace poet {

// The largest DeviceProfile::paging_charge_scale a profile holds.
inline constexpr double kMaxPagingChargeScale = 1e3;

struct DeviceProfile {
  std::string name;
  std::string description;
  double flops_per_second = 0;        // sustained compute rate (the reference's FLOPS)
  double flops_per_joule = 0;         // the reference's FLOPS_PER_WATT (it means FLOP/J)
  double compute_power_w = 0;         // active compute power (informational: POWER)
  double pagein_latency_s = 0;        // secondary storage -> RAM, per transfer
  double pagein_bytes_per_s = 0;
  double pageout_latency_s = 0;       // RAM -> secondary storage, per transfer
  double pageout_bytes_per_s = 0;
  double memory_power_w = 0;          // power drawn while paging (MEMORY_POWER)
  // Compute time a transfer (either way) takes from the kernels running beside it: its
  // copy and checksum on the I/O thread, its system calls, the memory bus. Measured by
  // `poet profile`; optional in the JSON (0: free, as the reference's model has it).
  double paging_cpu_per_transfer_s = 0;
  double paging_cpu_per_byte_s = 0;
  // What real steps showed a transfer costs, as a multiple of the two figures above
  // (`poet profile` measures it from a plan that pages, paging_calibration.h; 1 when absent).
  // Above 1, the figures themselves still delay the kernels when the transfer is issued, and
  // the rest lengthens the step without moving the kernels against the transfers
  // (NodeCost::paging_overhead_s): planned with all of it on the kernels' clock, page-ins
  // were started too late and real steps waited for them (docs/BENCHMARKS.md).
  double paging_charge_scale = 1;
  std::string sources;                // where the figures come from
  // Set by `poet profile` (measured_profile.h); absent from the built-in platforms.
  std::string measured_on;            // the machine
  std::string method;                 // how the figures were measured
  std::optional<MeasuredNodes> nodes;  // per-node costs of one training graph
  std::optional<MeasuredStorage> storage;  // the samples the storage figures were fitted to

  // A training step's optimizer update as the profile timed it (MeasuredNodes::update_s):
  // 0 for a built-in platform or a profile that did not record it.
  double optimizer_update_s() const { return nodes ? nodes->update_s : 0; }

  // Throws InputError naming the field if any figure is missing, negative, zero where a
  // rate must be positive, or not finite.
  void validate() const;
};

// The built-in platforms: m0, m4, a72, a72nocache, jetsontx2.
const std::vector<DeviceProfile>& builtin_platforms();
// Throws InputError for an unknown name, listing the valid ones.
const DeviceProfile& builtin_platform(std::string_view name);

nlohmann::json device_to_json(const DeviceProfile& device);
// Throws InputError naming the missing or bad field; `origin` names the file in messages.
DeviceProfile device_from_json(const nlohmann::json& j, std::string_view origin);
DeviceProfile load_device(const std::string& path);
void save_device(const DeviceProfile& device, const std::string& path);

// A built-in name, or else a path to a profile JSON file.
DeviceProfile resolve_device(const std::string& name_or_path);

}  // namespace poet
