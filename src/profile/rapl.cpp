#include "poet/profile/rapl.h"

#include <filesystem>
#include <fstream>
#include <regex>

namespace poet::profile {
namespace {

constexpr const char* kPowercap = "/sys/class/powercap";

std::optional<std::uint64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  std::uint64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<RaplMeter> RaplMeter::open(std::string& why) {
  std::error_code ec;
  if (!std::filesystem::is_directory(kPowercap, ec)) {
    why = std::string(kPowercap) + " does not exist (no powercap driver: a VM, a container, or a non-x86 board)";
    return std::nullopt;
  }
  // Top-level package domains only: their sub-domains (core, uncore, dram) are inside them.
  const std::regex package(R"(intel-rapl:\d+)");
  RaplMeter meter;
  for (const auto& entry : std::filesystem::directory_iterator(kPowercap, ec)) {
    if (!std::regex_match(entry.path().filename().string(), package)) continue;
    Domain d{.path = (entry.path() / "energy_uj").string()};
    const auto now = read_number(d.path);
    const auto max = read_number((entry.path() / "max_energy_range_uj").string());
    if (!now || !max) {
      why = d.path + " is not readable (it is root-only since Linux 5.10; run as root or chmod it)";
      return std::nullopt;
    }
    d.last_uj = *now;
    d.max_uj = *max;
    meter.domains_.push_back(d);
  }
  if (meter.domains_.empty()) {
    why = std::string(kPowercap) + " has no intel-rapl package domain";
    return std::nullopt;
  }
  return meter;
}

double RaplMeter::joules() {
  double total = 0;
  for (Domain& d : domains_) {
    if (const auto now = read_number(d.path)) {
      const std::uint64_t delta = *now >= d.last_uj ? *now - d.last_uj : d.max_uj - d.last_uj + *now;
      d.total_j += static_cast<double>(delta) * 1e-6;
      d.last_uj = *now;
    }
    total += d.total_j;
  }
  return total;
}

std::string RaplMeter::describe() const {
  std::string s;
  for (const Domain& d : domains_) s += (s.empty() ? "" : ", ") + d.path;
  return s;
}

}  // namespace poet::profile
