#include "poet/kernels/thread_setting.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "poet/util/error.h"

namespace poet::kernels {

void check_thread_setting() {
  const char* value = std::getenv("OMP_NUM_THREADS");
  if (value == nullptr || *value == '\0') return;  // unset: OpenMP's default, one thread per core
  const unsigned cores = std::thread::hardware_concurrency();
  const long most = static_cast<long>(kMaxThreadsPerCore) * (cores == 0 ? 4 : cores);
  std::string_view rest = value;
  for (;;) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    long threads = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), threads);
    std::string_view after(end, static_cast<std::size_t>(rest.data() + rest.size() - end));
    while (!after.empty() && after.front() == ' ') after.remove_prefix(1);
    if (error == std::errc::result_out_of_range || (error == std::errc{} && threads > most))
      throw InputError(fmt::format("OMP_NUM_THREADS is '{}', and poet runs at most {} compute threads on this "
                                   "machine's {} cores ({} a core: more only wait on each other, and far more cannot "
                                   "be started); set it to {} or fewer, or unset it for one a core",
                                   value, most, cores, kMaxThreadsPerCore, cores));
    if (error != std::errc{} || threads < 1 || (!after.empty() && after.front() != ','))
      throw InputError(fmt::format("OMP_NUM_THREADS is '{}', not a number of threads; set it to a whole number "
                                   "from 1 (this machine has {} cores), or unset it for one a core",
                                   value, cores));
    if (after.empty()) return;
    rest = after.substr(1);
  }
}

}  // namespace poet::kernels
