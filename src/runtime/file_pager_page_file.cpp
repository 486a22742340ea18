#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "poet/runtime/page_file.h"
#include "poet/util/error.h"

namespace poet::paging {
namespace {

constexpr std::size_t kBounceSize = std::size_t{1} << 20;
// Outcomes of a transfer loop that are not an errno.
constexpr int kNoProgress = -1;  // write(2) returned 0: the device took nothing more
constexpr int kEndOfFile = -2;   // read(2) returned 0 before the copy's end

std::uint64_t round_up(std::uint64_t n, std::uint64_t to) { return (n + to - 1) / to * to; }

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  const auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

std::string parent_of(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// Creates `requested` (or a unique file in it / in the working directory); returns the
// descriptor and sets `path`.
int create_file(const std::string& requested, std::string& path) {
  const bool make_unique = requested.empty() || is_directory(requested);
  if (make_unique) {
    const std::string folder = absolute(requested.empty() ? "." : requested);
    std::string name_template = (std::filesystem::path(folder) / "poet-pages-XXXXXX").string();
    std::vector<char> buffer(name_template.begin(), name_template.end());
    buffer.push_back('\0');
    const int fd = ::mkostemp(buffer.data(), O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      throw IoError(fmt::format("cannot create a page file in '{}': {}; choose a --page-file in a writable "
                                "folder with free space",
                                folder, std::strerror(err)));
    }
    path = buffer.data();
    return fd;
  }
  path = absolute(requested);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  const int err = errno;
  if (err == ENOENT)
    throw IoError(fmt::format("cannot create page file '{}': the folder '{}' does not exist; create it or "
                              "choose another --page-file",
                              path, parent_of(path)));
  if (err == EEXIST)
    throw IoError(fmt::format("cannot create page file '{}': a file of that name exists and poet does not "
                              "overwrite files it did not create; remove it or choose another --page-file",
                              path));
  throw IoError(fmt::format("cannot create page file '{}': {}; choose a --page-file in a writable folder",
                            path, std::strerror(err)));
}

}  // namespace

void PageFile::AlignedFree::operator()(std::byte* p) const { std::free(p); }

PageFile::PageFile(const std::string& requested, bool want_direct_io) {
  fd_ = create_file(requested, path_);
  if (want_direct_io) try_enable_direct_io();
}

PageFile::~PageFile() {
  remove();
  ::close(fd_);
}

void PageFile::try_enable_direct_io() {
  bounce_.reset(static_cast<std::byte*>(std::aligned_alloc(kBlockSize, kBounceSize)));
  if (!bounce_) return;
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags | O_DIRECT) != 0) {
    bounce_.reset();
    return;
  }
  // Some file systems accept the flag but refuse the I/O (EINVAL), so try one block.
  std::memset(bounce_.get(), 0, kBlockSize);
  const bool works = ::pwrite(fd_, bounce_.get(), kBlockSize, 0) == static_cast<ssize_t>(kBlockSize) &&
                     ::pread(fd_, bounce_.get(), kBlockSize, 0) == static_cast<ssize_t>(kBlockSize);
  if (!works) {
    ::fcntl(fd_, F_SETFL, flags);
    bounce_.reset();
  }
  direct_io_ = works;
  if (::ftruncate(fd_, 0) != 0) {
    // Harmless: the probe block is simply overwritten by the first slot.
  }
}

void PageFile::remove() {
  if (removed_) return;
  removed_ = true;
  struct stat ours {}, named {};
  if (::fstat(fd_, &ours) != 0 || ::stat(path_.c_str(), &named) != 0) return;
  if (ours.st_dev == named.st_dev && ours.st_ino == named.st_ino) ::unlink(path_.c_str());
}

std::string PageFile::folder() const { return parent_of(path_); }

std::string PageFile::check_still_there(std::uint64_t needed_size) const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0)
    return fmt::format("cannot inspect the page file ({}); check the storage device", std::strerror(errno));
  if (st.st_nlink == 0)
    return "the page file was removed while in use; nothing may delete poet's page file during training — "
           "rerun the step";
  if (static_cast<std::uint64_t>(st.st_size) < needed_size)
    return fmt::format("the page file was truncated to {} bytes while in use but the copy ends at byte {}; "
                       "nothing may modify poet's page file during training — rerun the step",
                       st.st_size, needed_size);
  return {};
}

int PageFile::write_fully(const std::byte* data, std::size_t size, std::uint64_t offset, FaultState& fault,
                          std::uint64_t& written) {
  std::size_t done = 0;
  while (done < size) {
    std::size_t ask = size - done;
    ssize_t n;
    if (fault.kind == InjectedFault::kDiskFull || fault.kind == InjectedFault::kWriteIoError) {
      errno = fault.kind == InjectedFault::kDiskFull ? ENOSPC : EIO;
      n = -1;
    } else if (fault.kind == InjectedFault::kShortWrite && fault.calls++ > 0) {
      errno = ENOSPC;
      n = -1;
    } else {
      // A short write keeps O_DIRECT's alignment so the data it writes is real.
      if (fault.kind == InjectedFault::kShortWrite)
        ask = direct_io_ ? ask / 2 / kBlockSize * kBlockSize : std::max<std::size_t>(1, ask / 2);
      n = ask == 0 ? 0 : ::pwrite(fd_, data + done, ask, static_cast<off_t>(offset + done));
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return kNoProgress;
    done += static_cast<std::size_t>(n);
    written += static_cast<std::uint64_t>(n);
  }
  return 0;
}

// Reads up to `size` bytes; succeeds once `needed` (<= size) are in (the rest is O_DIRECT
// padding, which may legitimately be cut short).
int PageFile::read_fully(std::byte* into, std::size_t size, std::size_t needed, std::uint64_t offset,
                         FaultState& fault) {
  std::size_t done = 0;
  while (done < needed) {
    if (fault.kind == InjectedFault::kReadIoError) return EIO;
    // O_DIRECT cannot resume at an unaligned offset; a short read there means the file ended.
    if (direct_io_ && done % kBlockSize != 0) return kEndOfFile;
    const ssize_t n = ::pread(fd_, into + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return kEndOfFile;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

std::string PageFile::write_at(std::uint64_t offset, std::span<const std::byte> data, InjectedFault injected) {
  POET_CHECK(offset % kBlockSize == 0, "page file offsets are block-aligned");
  if (std::string gone = check_still_there(0); !gone.empty()) return gone;
  FaultState fault{injected};
  std::uint64_t written = 0;
  if (!direct_io_) {
    const int err = write_fully(data.data(), data.size(), offset, fault, written);
    return err == 0 ? std::string() : write_failure(err, written, data.size());
  }
  for (std::size_t done = 0; done < data.size();) {
    const std::size_t chunk = std::min(kBounceSize, data.size() - done);
    const std::size_t padded = round_up(chunk, kBlockSize);
    std::memcpy(bounce_.get(), data.data() + done, chunk);
    std::memset(bounce_.get() + chunk, 0, padded - chunk);
    std::uint64_t chunk_written = 0;
    const int err = write_fully(bounce_.get(), padded, offset + done, fault, chunk_written);
    written += std::min<std::uint64_t>(chunk_written, chunk);
    if (err != 0) return write_failure(err, written, data.size());
    done += chunk;
  }
  return {};
}

std::string PageFile::read_at(std::uint64_t offset, std::span<std::byte> into, InjectedFault injected) {
  POET_CHECK(offset % kBlockSize == 0, "page file offsets are block-aligned");
  if (std::string gone = check_still_there(offset + into.size()); !gone.empty()) return gone;
  FaultState fault{injected};
  if (!direct_io_) {
    const int err = read_fully(into.data(), into.size(), into.size(), offset, fault);
    return err == 0 ? std::string() : read_failure(err, offset, into.size());
  }
  for (std::size_t done = 0; done < into.size();) {
    const std::size_t chunk = std::min(kBounceSize, into.size() - done);
    const int err = read_fully(bounce_.get(), round_up(chunk, kBlockSize), chunk, offset + done, fault);
    if (err != 0) return read_failure(err, offset, into.size());
    std::memcpy(into.data() + done, bounce_.get(), chunk);
    done += chunk;
  }
  return {};
}

std::string PageFile::write_failure(int err, std::uint64_t written, std::uint64_t total) const {
  if (err == ENOSPC || err == EDQUOT)
    return fmt::format("the storage is full ({}; {} of {} bytes written); free space on '{}' or choose another "
                       "--page-file",
                       std::strerror(err), written, total, folder());
  if (err == kNoProgress)
    return fmt::format("short write: the storage accepted only {} of {} bytes (probably full); free space on "
                       "'{}' or choose another --page-file",
                       written, total, folder());
  if (err == EIO)
    return fmt::format("the storage device reported an I/O error ({}); check the device (dmesg) or choose "
                       "another --page-file",
                       std::strerror(err));
  return fmt::format("write failed ({}); choose another --page-file", std::strerror(err));
}

std::string PageFile::read_failure(int err, std::uint64_t offset, std::uint64_t size) const {
  if (err == kEndOfFile) {
    // Distinguish a file cut short from one removed while the read ran.
    if (std::string gone = check_still_there(offset + size); !gone.empty()) return gone;
    return "short read: the page file ended before the copy did (it was truncated while in use); nothing may "
           "modify poet's page file during training — rerun the step";
  }
  if (err == EIO)
    return fmt::format("the storage device reported an I/O error ({}); check the device (dmesg) or choose "
                       "another --page-file",
                       std::strerror(err));
  return fmt::format("read failed ({}); check the storage device or choose another --page-file",
                     std::strerror(err));
}

}  // namespace poet::paging
