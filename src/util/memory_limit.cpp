#include "poet/util/memory_limit.h"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

// A cap at or above this is "no cap": cgroup v1 writes 2^63 rounded down to a page.
constexpr std::uint64_t kNoCap = std::uint64_t{1} << 62;

std::optional<std::uint64_t> read_cap(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  std::uint64_t bytes = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (error != std::errc{} || end != text.data() + text.size() || bytes >= kNoCap) return std::nullopt;
  return bytes;
}

// Lowers `limit` to the caps in `file` of the group `group` (a path from /proc/self/cgroup)
// under the hierarchy mounted at `root`/`mount`, and of each of its ancestors. In a
// container the group's path may name a host's group that is not mounted there (the
// container sees its own group at the mount's top): missing folders are passed over.
void lower_by_caps(std::optional<MemoryLimit>& limit, const std::filesystem::path& root, const std::string& mount,
                   std::string_view group, const char* file) {
  const std::filesystem::path top = root / mount;
  const std::filesystem::path below = std::filesystem::path(group).relative_path().lexically_normal();
  std::filesystem::path folder = below.empty() || below == "." || *below.begin() == ".." ? top : top / below;
  for (;;) {
    if (const auto cap = read_cap(folder / file); cap && (!limit || *cap < limit->bytes)) {
      const std::string shown = "/" + (folder / file).lexically_relative(root).string();
      limit = MemoryLimit{*cap, fmt::format("the memory limit of this control group ({}: {})", shown,
                                            format_bytes(static_cast<double>(*cap)))};
    }
    const std::filesystem::path up = folder.parent_path();
    if (folder == top || up == folder) return;
    folder = up;
  }
}

}  // namespace

std::optional<MemoryLimit> memory_limit(const std::filesystem::path& root) {
  std::optional<MemoryLimit> limit;
  if (root == "/") {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) {
      const std::uint64_t ram = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
      limit = MemoryLimit{ram, fmt::format("this machine's {} of RAM", format_bytes(static_cast<double>(ram)))};
    }
  }
  // Lines "ID:CONTROLLERS:PATH": v2's single hierarchy has ID 0 and no controllers; v1 names
  // its memory controller.
  std::ifstream groups(root / "proc/self/cgroup");
  for (std::string line; std::getline(groups, line);) {
    const std::size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string_view controllers = std::string_view(line).substr(first + 1, second - first - 1);
    const std::string_view group = std::string_view(line).substr(second + 1);
    if (controllers.empty()) lower_by_caps(limit, root, "sys/fs/cgroup", group, "memory.max");
    std::istringstream names{std::string(controllers)};
    for (std::string name; std::getline(names, name, ',');)
      if (name == "memory") lower_by_caps(limit, root, "sys/fs/cgroup/memory", group, "memory.limit_in_bytes");
  }
  return limit;
}

std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return page_size > 0 ? resident * static_cast<std::uint64_t>(page_size) : 0;
}

void check_memory_for(std::uint64_t bytes, std::string_view what, std::string_view fix) {
  const std::optional<MemoryLimit> limit = memory_limit();
  if (!limit) return;  // unknown: let the allocation decide
  const std::uint64_t held = resident_bytes();
  if (bytes + held <= limit->bytes) return;
  throw InputError(fmt::format("{} needs {} of memory beside the {} this process holds already, more than {}; {}", what,
                               format_bytes(static_cast<double>(bytes)), format_bytes(static_cast<double>(held)),
                               limit->what, fix));
}

}  // namespace poet
