#include "poet/util/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <vector>

#include "poet/util/disk_room.h"
#include "poet/util/error.h"
#include "poet/util/interrupt.h"
#include "poet/util/write_all.h"

namespace poet {
namespace {

// The system's reason, and for the usual ones what to do about it.
[[noreturn]] void fail(const std::string& path, int err) {
  std::string what_to_do;
  switch (err) {
    case EISDIR: what_to_do = "; it is a folder: give the path of a file (inside it, say)"; break;
    case ENOENT:
    case ENOTDIR: {
      // ENOENT from a folder that exists: a virtual file system (/proc) that takes no file.
      const std::filesystem::path folder = std::filesystem::path(path).parent_path();
      what_to_do = std::filesystem::is_directory(folder.empty() ? "." : folder)
                       ? "; its folder takes no new files (a virtual file system such as /proc): write elsewhere"
                       : "; its folder does not exist: create it first, or choose another path";
      break;
    }
    case EACCES:
    case EPERM:
    case EROFS: what_to_do = "; choose a path in a folder you may write to"; break;
    case ENOSPC:
    case EDQUOT: what_to_do = "; free space on that disk, or write elsewhere"; break;
    case EFBIG: what_to_do = file_too_large_advice(); break;
    default: what_to_do = process_limit_advice(err); break;
  }
  throw IoError(fmt::format("cannot write '{}': {}{}", path, std::strerror(err), what_to_do));
}

// The path a chain of symlinks ends at (which need not exist yet); `path` itself if it is
// no symlink. Relative links are resolved from their own folder, as the kernel does.
std::string final_target(const std::string& path) {
  std::filesystem::path p = path;
  for (int hops = 0; hops < 40; ++hops) {  // the kernel's own limit (ELOOP)
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p.string();
    std::vector<char> link(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4095) + 1);
    const ssize_t n = ::readlink(p.c_str(), link.data(), link.size());
    if (n < 0) fail(path, errno);
    const std::filesystem::path next(std::string(link.data(), static_cast<std::size_t>(n)));
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  fail(path, ELOOP);
}

// The mode a new file gets from open(..., 0666): 0666 less the umask (read without
// changing it, which umask(2) cannot do; 022 where /proc is missing).
mode_t new_file_mode() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "Umask:") {
      unsigned mask = 022;
      status >> std::oct >> mask;
      return static_cast<mode_t>(0666 & ~mask);
    }
  }
  return 0644;
}

// A device, a FIFO, a socket: written in place; replacing it would swap a system file
// for a regular one (as root, /dev/null).
void write_through(const std::string& path, const std::string& target, std::string_view contents) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) fail(path, errno);
  const bool written = write_all(fd, contents.data(), contents.size());
  const int err = errno;
  ::close(fd);
  if (!written) fail(path, err);
}

// Where stdout went before give_stdout_to(), which made descriptor 1 a copy of stderr; -1
// before.
int files_stdout = -1;

// The descriptor `path` names if it names one of this process's own: /dev/stdout,
// /dev/stderr, /dev/fd/N or /proc/self/fd/N (open or not). Such a path means "where this
// descriptor goes", and its link's text need not be a path at all (`pipe:[1234]`).
std::optional<int> named_descriptor(const std::string& path) {
  int fd = -1;
  if (path == "/dev/stdout") fd = STDOUT_FILENO;
  if (path == "/dev/stderr") fd = STDERR_FILENO;
  for (const std::string_view folder : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!path.starts_with(folder)) continue;
    const char* first = path.data() + folder.size();
    const char* last = path.data() + path.size();
    const auto [end, error] = std::from_chars(first, last, fd);
    if (error != std::errc{} || end != last || first == last) fd = -1;
  }
  if (fd < 0) return std::nullopt;
  return fd == STDOUT_FILENO && files_stdout >= 0 ? files_stdout : fd;
}

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// Written through the descriptor itself, at its offset and with its flags, after what poet
// printed there before: `-o /dev/stdout >> log` appends, a pipe gets the bytes in order.
// Reopening the path instead would start a regular file over at its first byte.
void write_to_descriptor(const std::string& path, int fd, std::string_view contents) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (!write_all(fd, contents.data(), contents.size())) fail(path, errno);
}

void sync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  // Some file systems refuse to fsync a folder (EINVAL); the rename is then as durable as
  // they make it.
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

// The temporary file beside the target: its name, then this (mkostemp's pattern).
constexpr std::string_view kTemporarySuffix = ".tmp-XXXXXX";

void remove_temporaries_of(const std::string& path) {
  std::filesystem::path target;
  try {
    target = final_target(path);
  } catch (const IoError&) {
    return;  // its write will say what is wrong with the path
  }
  const std::string prefix = target.filename().string() + std::string(kTemporarySuffix.substr(0, 5));
  const std::size_t name_size = target.filename().string().size() + kTemporarySuffix.size();
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : ".";
  std::error_code error;
  for (std::filesystem::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.size() == name_size && name.starts_with(prefix) && it->is_regular_file(error))
      ::unlink(it->path().c_str());
  }
}

// One file of a write: its temporary made, written and fsync'd at construction; renamed
// over the target by commit(); removed at destruction if not committed (or on interrupt).
// A target that is no regular file (a descriptor, a device) is written in place at commit.
class StagedWrite {
 public:
  StagedWrite(const std::string& path, std::string_view contents) : path_(path) {
    if (named_descriptor(path) || written_in_place_target(path)) {
      in_place_.emplace(contents);
      return;
    }
    target_ = final_target(path);
    struct stat st {};
    const bool exists = ::stat(target_.c_str(), &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) fail(path, EISDIR);
    const std::string parent = std::filesystem::path(target_).parent_path().string();
    folder_ = parent.empty() ? std::string(".") : parent;
    temporary_ = target_ + std::string(kTemporarySuffix);
    int fd = -1, made_errno = 0;
    {
      // An interrupt between making the file and registering it would leave it behind.
      const DeferInterrupts made_and_registered_together;
      fd = ::mkostemp(temporary_.data(), O_CLOEXEC);
      made_errno = errno;
      if (fd >= 0) remove_on_interrupt_ = std::make_unique<RemoveOnInterrupt>(temporary_);
    }
    if (fd < 0) fail(path, made_errno);
    // mkostemp makes the file 0600; the result gets the mode a plain open would give it, or
    // keeps the one it had.
    const bool ok = ::fchmod(fd, exists ? (st.st_mode & 07777) : new_file_mode()) == 0 &&
                    write_all(fd, contents.data(), contents.size()) && ::fsync(fd) == 0;
    int err = errno;
    const bool closed = ::close(fd) == 0;
    if (ok && !closed) err = errno;
    if (!ok || !closed) {
      ::unlink(temporary_.c_str());
      temporary_.clear();
      fail(path, err);
    }
  }
  StagedWrite(const StagedWrite&) = delete;
  StagedWrite& operator=(const StagedWrite&) = delete;
  ~StagedWrite() {
    if (!temporary_.empty()) ::unlink(temporary_.c_str());
  }

  bool in_place() const { return in_place_.has_value(); }

  void commit() {
    if (in_place_) {
      if (const auto fd = named_descriptor(path_)) return write_to_descriptor(path_, *fd, *in_place_);
      return write_through(path_, final_target(path_), *in_place_);
    }
    if (::rename(temporary_.c_str(), target_.c_str()) != 0) fail(path_, errno);
    temporary_.clear();
    sync_folder(folder_);
  }

 private:
  static bool written_in_place_target(const std::string& path) {
    struct stat st {};
    return ::stat(final_target(path).c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
  }

  std::string path_, target_, folder_, temporary_;  // temporary_: empty once renamed or removed
  std::optional<std::string_view> in_place_;
  std::unique_ptr<RemoveOnInterrupt> remove_on_interrupt_;
};

void write_file_atomically(const std::string& path, std::string_view contents) {
  StagedWrite(path, contents).commit();
}

void write_files_atomically(std::span<const FileContents> files) {
  std::vector<std::unique_ptr<StagedWrite>> staged;
  for (const FileContents& f : files) staged.push_back(std::make_unique<StagedWrite>(f.path, f.contents));
  std::vector<std::string> written;
  const auto commit = [&](std::size_t i) {
    try {
      staged[i]->commit();
    } catch (const IoError& e) {
      if (written.empty()) throw;
      throw IoError(fmt::format("{}; of the files written together, {} {} written already", e.what(),
                                fmt::join(written, ", "), written.size() == 1 ? "was" : "were"));
    }
    written.push_back("'" + files[i].path + "'");
  };
  // What is written in place first, with interrupts heard: opening a FIFO waits for its
  // reader, and Ctrl-C must end that wait. A stream is no file that can be replaced whole.
  for (std::size_t i = 0; i < staged.size(); ++i)
    if (staged[i]->in_place()) commit(i);
  const DeferInterrupts renamed_together;
  for (std::size_t i = 0; i < staged.size(); ++i)
    if (!staged[i]->in_place()) commit(i);
}

void give_stdout_to(const std::string& path) {
  if (files_stdout >= 0 || named_descriptor(path) != STDOUT_FILENO || !is_open(STDOUT_FILENO)) return;
  std::fflush(stdout);
  const int kept = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (kept < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    if (kept >= 0) ::close(kept);
    return;  // messages and the file then share stdout, as they would without this
  }
  files_stdout = kept;
}

bool written_in_place(const std::string& path) {
  struct stat st {};
  return named_descriptor(path) || (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
}

std::optional<std::string> output_path_problem(const std::string& path) {
  if (const auto fd = named_descriptor(path))
    return is_open(*fd) ? std::nullopt
                        : std::optional(fmt::format("'{}' names file descriptor {}, which is not open; open it in the "
                                                    "shell ({}> FILE) or give a file's path",
                                                    path, *fd, *fd));
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return fmt::format("'{}' is a folder; give the path of a file (inside it, say)", path);
  // The file is made beside the symlinks' final target, as write_file_atomically makes it.
  std::string target = path;
  try {
    target = final_target(path);
  } catch (const IoError&) {  // a chain that loops, or a link that cannot be read
    return fmt::format("'{}' is a symbolic link that cannot be followed to a file (a loop, or too long a chain); "
                       "check where it points, or write elsewhere",
                       path);
  }
  const std::filesystem::path folder = std::filesystem::path(target).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder, ec))
    return fmt::format("the folder '{}' does not exist; create it or write elsewhere", folder.string());
  // A device or FIFO is written in place: no new file.
  const std::filesystem::file_status status = std::filesystem::status(target, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) return std::nullopt;
  if (const auto problem = new_file_problem(folder.string())) return *problem + "; write elsewhere";
  // An immutable or append-only file (chattr +i, +a) cannot be replaced, even by root: the
  // write would fail after the work (a profile's minutes), blaming the folder.
  if (std::filesystem::exists(status)) {
    int flags = 0;
    const int fd = ::open(target.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    const bool got = fd >= 0 && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (fd >= 0) ::close(fd);
    if (got && (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL)) != 0) {
      const bool immutable = (flags & FS_IMMUTABLE_FL) != 0;
      return fmt::format("'{}' is {} (chattr +{}), and cannot be replaced; clear the flag (chattr -{}) or write "
                         "elsewhere",
                         target, immutable ? "immutable" : "append-only", immutable ? 'i' : 'a', immutable ? 'i' : 'a');
    }
  }
  const std::string name = std::filesystem::path(target).filename().string();
  const long name_max = ::pathconf(folder.empty() ? "." : folder.c_str(), _PC_NAME_MAX);
  if (name_max > 0 && name.size() + kTemporarySuffix.size() > static_cast<std::size_t>(name_max))
    return fmt::format("the file name '{}...' has {} bytes, and its folder takes names of at most {} ({} with the "
                       "suffix of the temporary file written first); shorten it",
                       name.substr(0, 40), name.size(), name_max, name_max - kTemporarySuffix.size());
  return std::nullopt;
}

std::optional<std::string> new_file_problem(const std::string& folder) {
  const std::string shown = folder.empty() ? "." : folder;
  std::string name = (std::filesystem::path(shown) / ".poet-probe-XXXXXX").string();
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(name.c_str());
    return std::nullopt;
  }
  switch (const int err = errno) {
    case ENOENT:  // from a folder that exists: a virtual file system
      return fmt::format("the folder '{}' takes no new files (a virtual file system such as /proc)", shown);
    case EACCES:
    case EPERM:
    case EROFS: return fmt::format("the folder '{}' is not writable ({})", shown, std::strerror(err));
    default: return fmt::format("the folder '{}' takes no new file ({})", shown, std::strerror(err));
  }
}

void check_output_path(const std::string& path, std::string_view option) {
  if (const auto problem = output_path_problem(path)) throw InputError(fmt::format("{}: {}", option, *problem));
}

MadeFolder::~MadeFolder() { ::rmdir(path_.c_str()); }  // fails, as it should, once a file is in it

std::unique_ptr<MadeFolder> make_output_folder(const std::string& dir, std::string_view option) {
  std::error_code ec;
  const bool made = std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw InputError(fmt::format("{}: cannot make the folder '{}' ({}); give a folder you can write to", option, dir,
                                 ec ? ec.message() : "a file of that name exists"));
  if (const auto problem = new_file_problem(dir))
    throw InputError(fmt::format("{}: {}; give a folder you can write to", option, *problem));
  return made ? std::make_unique<MadeFolder>(dir) : nullptr;
}

}  // namespace poet
