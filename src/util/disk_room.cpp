#include "poet/util/disk_room.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {
namespace {

// The file itself if it exists, else the folder a new file would be made in.
std::string existing_part(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return path;
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  return folder.empty() ? "." : folder.string();
}

std::string listed(const std::vector<const PlannedWrite*>& writes) {
  std::string text;
  for (std::size_t k = 0; k < writes.size(); ++k)
    text += fmt::format("{}{} '{}' {}", k == 0 ? "" : k + 1 == writes.size() ? " and " : ", ", writes[k]->option,
                        writes[k]->path, format_bytes(static_cast<double>(writes[k]->bytes * writes[k]->copies)));
  return text;
}

// Why a file needs more room than its size, for a message.
std::string copies_text(const PlannedWrite& w) {
  return w.copies > 1 ? fmt::format(" ({} copies of {}: a new one is written beside the last before it replaces it)",
                                    w.copies, format_bytes(static_cast<double>(w.bytes)))
                      : "";
}

// The largest file this process may write: the shell's `ulimit -f` (RLIMIT_FSIZE). A write
// past it fails with EFBIG (poet ignores SIGXFSZ, which would kill it mid-write).
std::optional<std::uint64_t> file_size_limit() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<std::uint64_t>(limit.rlim_cur);
}

// FAT (an SD card's file system) holds files of up to 4 GiB - 1 byte.
constexpr std::uint64_t kFatLargestFile = (std::uint64_t{1} << 32) - 1;
constexpr long kFatMagic = 0x4d44;  // MSDOS_SUPER_MAGIC, statfs(2)

constexpr long kTmpfsMagic = 0x01021994, kRamfsMagic = 0x858458f6;  // statfs(2)

std::string ulimit_text(std::uint64_t bytes) {
  return fmt::format("{} (ulimit -f {})", format_bytes(static_cast<double>(bytes)), bytes / 1024);
}

}  // namespace

std::string file_too_large_advice() {
  const auto limit = file_size_limit();
  return limit ? fmt::format("; it passed this shell's file-size limit, {}: raise it (ulimit -f unlimited) and run "
                             "again",
                             ulimit_text(*limit))
               : "; it passed the largest file its file system holds (4 GiB on FAT): write to another file system";
}

void check_room_for(std::span<const PlannedWrite> writes) {
  struct FileSystem {
    std::uint64_t free_bytes = 0, needed = 0;
    std::vector<const PlannedWrite*> writes;
  };
  std::map<dev_t, FileSystem> file_systems;
  for (const PlannedWrite& w : writes) {
    const std::string where = existing_part(w.path);
    struct statvfs fs {};
    struct stat st {};
    if (::statvfs(where.c_str(), &fs) != 0 || ::stat(where.c_str(), &st) != 0) continue;
    const std::string what =
        fmt::format("{} '{}' needs up to {}", w.option, w.path, format_bytes(static_cast<double>(w.bytes)));
    if (const auto limit = file_size_limit(); limit && w.bytes > *limit)
      throw IoError(fmt::format("{}, and this shell's file-size limit is {}; raise it (ulimit -f unlimited) and run "
                                "again",
                                what, ulimit_text(*limit)));
    struct statfs type {};
    if (w.bytes > kFatLargestFile && ::statfs(where.c_str(), &type) == 0 && type.f_type == kFatMagic)
      throw IoError(fmt::format("{}, and a file on its FAT file system holds at most 4 GiB; choose a {} on another "
                                "file system",
                                what, w.option));
    FileSystem& f = file_systems[st.st_dev];
    f.free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
    f.needed += w.bytes * w.copies;
    f.writes.push_back(&w);
  }
  for (const auto& [device, f] : file_systems) {
    if (f.needed <= f.free_bytes) continue;
    const std::string free_text = format_bytes(static_cast<double>(f.free_bytes));
    if (f.writes.size() == 1)
      throw IoError(fmt::format("{} '{}' needs up to {}{} and its file system has {} free; free space there or choose "
                                "a {} on a disk with room",
                                f.writes[0]->option, f.writes[0]->path, format_bytes(static_cast<double>(f.needed)),
                                copies_text(*f.writes[0]), free_text, f.writes[0]->option));
    throw IoError(fmt::format("{} need up to {} in all on one file system, which has {} free; free space there or "
                              "put some of them on a disk with room",
                              listed(f.writes), format_bytes(static_cast<double>(f.needed)), free_text));
  }
}

bool in_memory_file_system(const std::string& path) {
  std::filesystem::path at = std::filesystem::absolute(path.empty() ? "." : path);
  struct statfs type {};
  while (::statfs(at.c_str(), &type) != 0) {  // not made yet: its folder's file system
    if (at == at.parent_path()) return false;
    at = at.parent_path();
  }
  return type.f_type == kTmpfsMagic || type.f_type == kRamfsMagic;
}

}  // namespace poet
