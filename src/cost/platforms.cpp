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
    // The reference has no compute figures for the TX2. One Cortex-A57 core at its 2 GHz
    // (NVIDIA's module data sheet) retiring one FLOP per cycle, the assumption the
    // reference states for its Raspberry Pi profile; the power is the reference's own
    // measurement of one core under stress minus idle (995 - 229 mW).
    d.compute_power_w = (995 - 229) * 1e-3;
    d.flops_per_second = 2e9;
    d.flops_per_joule = d.flops_per_second / d.compute_power_w;
    d.pagein_latency_s = 0.00054;
    d.pagein_bytes_per_s = 108.5e6;
    d.pageout_latency_s = 0.002396;
    d.pageout_bytes_per_s = 94.37e6;
    d.memory_power_w = 309e-3;
    d.sources =
        "paging and power: POET reference implementation (chipsets.py, JetsonTX2); compute: one A57 core at "
        "2 GHz (NVIDIA Jetson TX2 module data sheet) at 1 FLOP/cycle, as the reference assumes for the A72";
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
