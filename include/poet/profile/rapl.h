// The CPU package's energy counter, from Linux powercap (Intel RAPL, also exposed for AMD
// Zen): /sys/class/powercap/intel-rapl:N/energy_uj, one per package. Usually readable by
// root only since Linux 5.10, and absent in most virtual machines and on ARM boards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace poet::profile {

class RaplMeter {
 public:
  // The package domains, if every one of them can be read now; otherwise nullopt and
  // `why` says what was missing or unreadable.
  static std::optional<RaplMeter> open(std::string& why);

  // Joules used by all packages since open(), across counter wrap-arounds if read at least
  // once per wrap (minutes at full power).
  double joules();
  std::string describe() const;  // the domains read

 private:
  struct Domain {
    std::string path;
    std::uint64_t max_uj = 0, last_uj = 0;
    double total_j = 0;
  };
  std::vector<Domain> domains_;
};

}  // namespace poet::profile
