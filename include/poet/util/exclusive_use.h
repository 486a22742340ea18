// One poet run at a time per file it keeps across runs (a checkpoint, a sweep's progress):
// two runs writing one checkpoint would each replace the other's epochs, and two sweeps
// in one folder would resume from, and overwrite, each other's rows. Each whole file stays
// intact either way (atomic_file.h); what is lost is a run's work.
//
// The lock is flock(2) on "<path>.lock" (for a folder, "<folder>/poet.lock"), so the system
// drops it when its process ends, however it ends: a lock file left by a killed run blocks
// nothing. The file is removed when the run ends (or is interrupted: interrupt.h) and holds
// the holder's process id, for the message a second run gets. Holding the lock of a file,
// a run removes the temporaries a killed run's write of it left (atomic_file.h), or for a
// folder those of the files it names.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "poet/util/interrupt.h"

namespace poet {

class ExclusiveUse {
 public:
  // Takes the lock for `path`, written by `option`. Throws InputError naming both, and the
  // other run's process id, if another run holds it. Where the file system cannot lock
  // (some network file systems), or the lock file cannot be made, nothing is locked: the
  // run's own writes report their problems. For a folder, `files_written` names the files
  // the holder writes in it: their temporaries a killed run left are removed (a folder may be
  // the user's working folder, so nothing else in it is touched).
  ExclusiveUse(const std::string& path, std::string_view option, std::span<const std::string_view> files_written = {});
  ~ExclusiveUse();
  ExclusiveUse(const ExclusiveUse&) = delete;
  ExclusiveUse& operator=(const ExclusiveUse&) = delete;

  // "<path>.lock", or "<path>/poet.lock" if `path` is a folder.
  static std::string lock_path(const std::string& path);

 private:
  std::string lock_path_;
  int fd_ = -1;  // -1: nothing locked
  std::unique_ptr<RemoveOnInterrupt> remove_on_interrupt_;
};

}  // namespace poet
