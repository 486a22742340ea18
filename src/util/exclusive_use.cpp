#include "poet/util/exclusive_use.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>

#include "poet/util/atomic_file.h"
#include "poet/util/error.h"

namespace poet {
namespace {

// The process id the holder wrote into its lock file, or 0 if none can be read yet.
long holder_of(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  long pid = 0;
  if (n > 0) std::from_chars(text, text + n, pid);
  return pid;
}

// Whether `fd` is still the file `path` names: the holder that ends removes its lock file,
// so a run that opened it just before may lock a file no other run will ever see.
bool still_named(int fd, const std::string& path) {
  struct stat held {}, named {};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
         held.st_ino == named.st_ino;
}

}  // namespace

std::string ExclusiveUse::lock_path(const std::string& path) {
  std::error_code error;
  // By the file's own path, links resolved: two runs given two links to one checkpoint
  // write one file, and must meet at one lock.
  std::filesystem::path file = std::filesystem::weakly_canonical(path, error);
  if (error) file = path;
  if (std::filesystem::is_directory(file, error)) return (file / "poet.lock").string();
  return file.string() + ".lock";
}

ExclusiveUse::ExclusiveUse(const std::string& path, std::string_view option,
                           std::span<const std::string_view> files_written)
    : lock_path_(lock_path(path)) {
  for (;;) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const long pid = holder_of(fd);
      ::close(fd);
      if (error != EWOULDBLOCK) return;
      throw InputError(fmt::format(
          "{} '{}' is in use by another poet run{}; wait for it to end, or give this run another {}", option, path,
          pid > 0 ? fmt::format(" (process {})", pid) : "", option));
    }
    if (still_named(fd, lock_path_)) {
      fd_ = fd;
      break;
    }
    ::close(fd);
  }
  const std::string pid = std::to_string(::getpid());
  // Without the id the lock still holds; a second run's message then names no process.
  [[maybe_unused]] const bool noted =
      ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
  remove_on_interrupt_ = std::make_unique<RemoveOnInterrupt>(lock_path_);
  // No other poet run writes `path` now: a temporary of it is one a killed run left.
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) {
    remove_temporaries_of(path);
    return;
  }
  for (const std::string_view name : files_written) remove_temporaries_of((std::filesystem::path(path) / name).string());
}

ExclusiveUse::~ExclusiveUse() {
  if (fd_ < 0) return;
  remove_on_interrupt_.reset();
  if (still_named(fd_, lock_path_)) ::unlink(lock_path_.c_str());  // before the unlock: see still_named
  ::close(fd_);
}

}  // namespace poet
