// The built-in platforms. The first four carry the reference implementation's constants,
// computed by the same expressions (docs/FORMATS.md gives their derivations); jetsontx2
// completes the reference's profile, which has paging figures only.
#include <fmt/format.h>

#include "poet/cost/device.h"
#include "poet/util/error.h"

namespace poet {
namespace {

// An SD card on SPI, measured by the reference on its microcontroller boards.
constexpr double kMcuPageinLatency = 0.109e-3, kMcuPageinThroughput = 4616.51e3;
constexpr double kMcuPageoutLatency = 0.113e-3, kMcuPageoutThroughput = 4440e3;
constexpr double kMcuMemoryPower = 100e-3 * 3.3;

std::vector<DeviceProfile> make_platforms() {
  std::vector<DeviceProfile> p;
  {
    DeviceProfile d;
    d.name = "m0";
    d.description = "Arduino MKR1000, ARM Cortex-M0+ at 48 MHz, no FPU; SD card over SPI";
    // 2000 FLOP measured in 12 ms, at 20 mA and 3.3 V.
    d.flops_per_second = 2000 / 0.012;
    d.flops_per_joule = 2000 / (0.012 * 0.020 * 3.3);
    d.compute_power_w = 20e-3 * 3.3;
    d.pagein_latency_s = kMcuPageinLatency;
    d.pagein_bytes_per_s = kMcuPageinThroughput;
    d.pageout_latency_s = kMcuPageoutLatency;
    d.pageout_bytes_per_s = kMcuPageoutThroughput;
    d.memory_power_w = kMcuMemoryPower;
    d.sources = "POET reference implementation (chipsets.py, MKR1000)";
    p.push_back(d);
  }
  {
    DeviceProfile d;
    d.name = "m4";
    d.description = "Nordic nRF52840, ARM Cortex-M4F at 64 MHz; SD card over SPI";
    // 1,628,300,000 FLOP measured in 255.6237 s, at 3.328 mA and 3.3 V.
    d.flops_per_second = (16283.0 * 100 * 1000) / 255.6237;
    d.flops_per_joule = (16283.0 * 100 * 1000) / (255.6237 * 0.003328 * 3.3);
    d.compute_power_w = 3.328e-3 * 3.3;
    d.pagein_latency_s = kMcuPageinLatency;
    d.pagein_bytes_per_s = kMcuPageinThroughput;
    d.pageout_latency_s = kMcuPageoutLatency;
    d.pageout_bytes_per_s = kMcuPageoutThroughput;
    d.memory_power_w = kMcuMemoryPower;
    d.sources = "POET reference implementation (chipsets.py, M4F)";
    p.push_back(d);
  }
  for (const bool cached : {true, false}) {
    DeviceProfile d;
    d.name = cached ? "a72" : "a72nocache";
    d.description = cached ? "Raspberry Pi 4B, ARM Cortex-A72 x4; SD card with write caching"
                           : "Raspberry Pi 4B, ARM Cortex-A72 x4; SD card without write caching";
    // The reference assumes 2 GFLOPS with caching, and the 120 MFLOPS it measured without.
    d.flops_per_second = cached ? 2e9 : (16283.0 * 100 * 1000) / 13.53;
    d.flops_per_joule = (16283.0 * 100 * 1000) / (13.53 * 0.6 * 5);
    d.compute_power_w = 0.6 * 5;
    d.pagein_latency_s = 0.00509561e-3;
    d.pagein_bytes_per_s = 45.5e6;
    d.pageout_latency_s = cached ? 0.0185314e-3 : 4.23532e-3;
    d.pageout_bytes_per_s = cached ? 24.5e6 : 17.1e6;
    d.memory_power_w = 30e-3 * 5;
    d.sources = cached ? "POET reference implementation (chipsets.py, RPi)"
                       : "POET reference implementation (chipsets.py, RPiNoCache)";
    p.push_back(d);
  }
  {
    DeviceProfile d;
    d.name = "jetsontx2";
    d.description = "NVIDIA Jetson TX2, CPU only (ARM Cortex-A57 cluster); eMMC storage";
    d.flops_per_second = 0;  // filled from public specifications below
    d.flops_per_joule = 0;
    d.compute_power_w = (995 - 229) * 1e-3;  // one core under stress, minus idle
    d.pagein_latency_s = 0.00054;
    d.pagein_bytes_per_s = 108.5e6;
    d.pageout_latency_s = 0.002396;
    d.pageout_bytes_per_s = 94.37e6;
    d.memory_power_w = 309e-3;
    d.sources = "paging and power: POET reference implementation (chipsets.py, JetsonTX2)";
    p.push_back(d);
  }
  return p;
}

}  // namespace

const std::vector<DeviceProfile>& builtin_platforms() {
  static const std::vector<DeviceProfile> platforms = make_platforms();
  return platforms;
}

const DeviceProfile& builtin_platform(std::string_view name) {
  std::string names;
  for (const auto& d : builtin_platforms()) {
    if (d.name == name) return d;
    names += (names.empty() ? "" : ", ") + d.name;
  }
  throw InputError(fmt::format("unknown platform '{}': expected one of {}", name, names));
}

}  // namespace poet
