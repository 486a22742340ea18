#include "poet/util/disk_room.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <filesystem>
#include <map>
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
                        writes[k]->path, format_bytes(static_cast<double>(writes[k]->bytes)));
  return text;
}

}  // namespace

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
    FileSystem& f = file_systems[st.st_dev];
    f.free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
    f.needed += w.bytes;
    f.writes.push_back(&w);
  }
  for (const auto& [device, f] : file_systems) {
    if (f.needed <= f.free_bytes) continue;
    const std::string free_text = format_bytes(static_cast<double>(f.free_bytes));
    if (f.writes.size() == 1)
      throw IoError(fmt::format("{} needs up to {} and its file system has {} free; free space there or choose a {} on "
                                "a disk with room",
                                fmt::format("{} '{}'", f.writes[0]->option, f.writes[0]->path),
                                format_bytes(static_cast<double>(f.needed)), free_text, f.writes[0]->option));
    throw IoError(fmt::format("{} need up to {} in all on one file system, which has {} free; free space there or "
                              "put some of them on a disk with room",
                              listed(f.writes), format_bytes(static_cast<double>(f.needed)), free_text));
  }
}

}  // namespace poet
