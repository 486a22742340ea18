// How much memory this process may hold: the machine's RAM, or less where a control group
// caps it (a container started with `docker run --memory 2g`, a systemd unit's MemoryMax).
// Past a cgroup's cap the kernel kills the process outright (SIGKILL, exit 137) with no
// message, so a run that cannot fit is refused before it allocates.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace poet {

struct MemoryLimit {
  std::uint64_t bytes = 0;
  // For messages: "this machine's 23.5 GiB of RAM", "the memory limit of this control group
  // (/sys/fs/cgroup/memory.max: 2 GiB)".
  std::string what;
};

// The lower of the machine's RAM and every memory cap of this process's control group and
// its ancestors (cgroup v2's memory.max, v1's memory.limit_in_bytes). `root` stands for
// "/" in tests, holding proc/self/cgroup and sys/fs/cgroup; the RAM is read from the system
// only when `root` is "/". Nothing if no figure can be read.
std::optional<MemoryLimit> memory_limit(const std::filesystem::path& root = "/");

// The bytes this process holds now (its resident set); 0 where /proc cannot tell.
std::uint64_t resident_bytes();

// Throws InputError when `bytes` more, beside what this process holds already, would pass
// memory_limit(): "{what} needs ... beside the ... this process holds already, more than
// ...; {fix}". Called before a large allocation, which the kernel would otherwise grant
// and then answer at its first touch by killing the process.
void check_memory_for(std::uint64_t bytes, std::string_view what, std::string_view fix);

}  // namespace poet
