// Room on disk for what a run will write, checked before it starts: a full disk then stops
// a training run in its first second, not at its first page-out or after its first epoch.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace poet {

struct PlannedWrite {
  std::string path;      // the file (it may not exist yet)
  std::uint64_t bytes;   // what it takes beyond what it holds now (an atomic replacement: its whole size)
  std::string option;    // the option that named it, e.g. "--checkpoint"
  // Files of `bytes` on disk at once: 2 for a file replaced by a copy written beside it (a
  // checkpoint saved again), each copy within the file-size limits.
  std::uint64_t copies = 1;
};

// Throws IoError when the writes planned on one file system need more than it has free,
// or one file would be larger than a file may be here (the shell's `ulimit -f`, or FAT's
// 4 GiB), naming each with its size, the room and the fix. A path whose file system cannot
// be told (statvfs fails) is left to its writes to report.
void check_room_for(std::span<const PlannedWrite> writes);

// Whether `path` (a file or folder, or where it would be made) is on a file system kept in
// RAM (tmpfs, ramfs: /dev/shm, and /tmp on some systems): pages written there stay in this
// machine's memory, which a RAM budget is to spare.
bool in_memory_file_system(const std::string& path);

// What to do about a write that failed with EFBIG, for an error message: "; ..." naming the
// file-size limit it passed.
std::string file_too_large_advice();

}  // namespace poet
