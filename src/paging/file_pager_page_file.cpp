#include <fcntl.h>
#include <fmt/format.h>
#include <linux/aio_abi.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "poet/paging/checksum.h"
#include "poet/paging/page_file.h"
#include "poet/util/atomic_file.h"
#include "poet/util/disk_room.h"
#include "poet/util/error.h"

namespace poet::paging {
namespace {

// O_DIRECT transfers go through a bounce buffer of two halves of kBounceSize (the device
// works on one while the CPU fills or empties the other); buffered ones are checksummed and
// handed to the kernel in chunks of kChunkSize (which stay in the CPU's cache meanwhile).
constexpr std::size_t kBounceSize = std::size_t{4} << 20;

std::uint64_t round_up(std::uint64_t n, std::uint64_t to) { return (n + to - 1) / to * to; }
constexpr std::size_t kChunkSize = std::size_t{1} << 20;

// An O_DIRECT tensor moves in about four chunks (whole blocks, 1 MiB to a bounce half):
// with fewer, the copy and checksum of its first chunk and the device's work on its last
// overlap nothing (4 MiB tensors in one chunk ran at 0.78-0.81 of dd, in four at 0.90-1.04);
// below 1 MiB a request's own overhead costs more than the overlap gains (256 KiB chunks
// took 1 MiB tensors from 0.67-0.81 of dd to 0.55-0.61).
std::size_t direct_chunk(std::size_t tensor_bytes) {
  const std::size_t quarter = round_up((tensor_bytes + 3) / 4, PageFile::kBlockSize);
  return std::clamp<std::size_t>(quarter, std::size_t{1} << 20, kBounceSize);
}
// Whether a chunk can move between the tensor's own memory and the device, skipping the
// bounce buffer: O_DIRECT needs the address and the length in whole blocks. The executor's
// arena is block-aligned, and nearly all paged bytes sit at block offsets in whole blocks
// (resnet18_cifar at batch 8, Capuchin at 50%: 11,001,856 of 11,009,792). The I/O thread
// takes its CPU time from the step's kernels; without the copy, those Capuchin steps took
// 19.6 ms instead of 20.5 ms (median of 5 alternated runs; checkpoint-all 14.8 ms).
bool moves_directly(const std::byte* tensor_chunk, std::size_t chunk) {
  return reinterpret_cast<std::uintptr_t>(tensor_chunk) % PageFile::kBlockSize == 0 && chunk % PageFile::kBlockSize == 0;
}

// Outcomes of a transfer loop that are not an errno.
constexpr int kNoProgress = -1;  // write(2) returned 0: the device took nothing more
constexpr int kEndOfFile = -2;   // read(2) returned 0 before the copy's end


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

constexpr char kMagic[] = "poet page file v1\n";
constexpr std::string_view kUniqueNamePrefix = "poet-pages-";  // + 6 characters mkostemp picks

std::string this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// The start time of process `pid` (clock ticks since boot, /proc/PID/stat's field 22), or
// nothing if it does not run: with the pid, it names one process even after pid reuse. A
// zombie (killed, not yet reaped: a container's init may never reap it) does not run.
std::optional<unsigned long long> start_time_of(long pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t after_name = stat.rfind(')');  // the name may hold spaces and parentheses
  if (after_name == std::string::npos || after_name + 2 >= stat.size()) return std::nullopt;
  if (const char state = stat[after_name + 2]; state == 'Z' || state == 'X') return std::nullopt;
  std::istringstream fields(stat.substr(after_name + 2));
  std::string field;
  for (int k = 3; k < 22 && (fields >> field); ++k) {
  }
  unsigned long long start = 0;
  if (!(fields >> start)) return std::nullopt;
  return start;
}

// "poet page file v1\nhost H\npid P\nstart S\n", zero-padded to the header block.
std::string header_block() {
  const long pid = ::getpid();
  std::string header = fmt::format("{}host {}\npid {}\nstart {}\n", kMagic, this_host(), pid,
                                   start_time_of(pid).value_or(0));
  header.resize(PageFile::kHeaderBytes, '\0');
  return header;
}

// Removes the page files in `folder` left by runs of this host that were killed (kill -9,
// a power cut): each run makes a new uniquely named one, so without this they would pile
// up, each as large as a run's paged tensors. Only a file whose header names a process
// that no longer runs is removed; one still being created has no header yet, and is kept.
void remove_stale_page_files(const std::string& folder) {
  std::error_code error;
  for (std::filesystem::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(kUniqueNamePrefix) && PageFile::is_stale(it->path().string()))
      ::unlink(it->path().c_str());
  }
}

// Creates `requested` (or a unique file in it / in the working directory); returns the
// descriptor and sets `path`.
int create_file(const std::string& requested, std::string& path) {
  const bool make_unique = requested.empty() || is_directory(requested);
  if (make_unique) {
    const std::string folder = absolute(requested.empty() ? "." : requested);
    remove_stale_page_files(folder);
    std::string name_template = (std::filesystem::path(folder) / (std::string(kUniqueNamePrefix) + "XXXXXX")).string();
    std::vector<char> buffer(name_template.begin(), name_template.end());
    buffer.push_back('\0');
    const int fd = ::mkostemp(buffer.data(), O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      const std::string limit = process_limit_advice(err);
      throw IoError(fmt::format("cannot create a page file in '{}': {}{}", folder, std::strerror(err),
                                limit.empty() ? "; put the page file in a writable folder with free space" : limit));
    }
    path = buffer.data();
    return fd;
  }
  path = absolute(requested);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  int err = errno;
  // A page file an earlier run could not remove (it was killed): replace it. The O_EXCL
  // create lets only one run have the path; two runs that read the stale header at the same
  // instant could still both unlink (the second removing the first's new file, which then
  // fails its next transfer with "removed while in use") - a race only a user starting two
  // runs on one --page-file at once can make.
  if (fd < 0 && err == EEXIST && PageFile::is_stale(path) && ::unlink(path.c_str()) == 0) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    err = errno;
  }
  if (fd >= 0) return fd;
  if (err == ENOENT && std::filesystem::is_directory(parent_of(path)))  // e.g. /proc: exists, takes no new files
    throw IoError(fmt::format("cannot create page file '{}': the folder '{}' does not take new files (a virtual file "
                              "system such as /proc?); put the page file in a writable folder",
                              path, parent_of(path)));
  if (err == ENOENT)
    throw IoError(fmt::format("cannot create page file '{}': the folder '{}' does not exist; create it or "
                              "choose another place for the page file",
                              path, parent_of(path)));
  if (err == EEXIST)
    throw IoError(fmt::format("cannot create page file '{}': a file of that name exists and poet does not "
                              "overwrite files it did not create; remove it or choose another place for the page file",
                              path));
  throw IoError(fmt::format("cannot create page file '{}': {}; put the page file in a writable folder",
                            path, std::strerror(err)));
}

}  // namespace

void PageFile::AlignedFree::operator()(std::byte* p) const { std::free(p); }

PageFile::PageFile(const std::string& requested, bool want_direct_io, std::size_t lanes)
    : lanes_(std::max<std::size_t>(lanes, 1)) {
  fd_ = create_file(requested, path_);
  // Held while this run lives, and dropped by the system however it ends: owner_of trusts
  // a header's dead process only if no one holds this lock (a process of another PID
  // namespace, a container of the same host name, would look dead by its number).
  ::flock(fd_, LOCK_EX | LOCK_NB);
  remove_on_interrupt_ = std::make_unique<RemoveOnInterrupt>(path_);
  const std::string header = header_block();
  if (::pwrite(fd_, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size())) {
    const int err = errno;
    remove();
    ::close(fd_);
    throw IoError(fmt::format("cannot write page file '{}': {}; put the page file in a writable folder with "
                              "free space",
                              path_, std::strerror(err)));
  }
  if (want_direct_io) try_enable_direct_io();
}

PageFile::Owner PageFile::owner_of(const std::string& path) {
  // Not blocking: opening a FIFO for reading would wait for a writer, for ever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  char block[kHeaderBytes] = {};
  const ssize_t n = ::pread(fd, block, sizeof block - 1, 0);
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const bool locked = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;  // by its running creator
  ::close(fd);
  if (!regular || n <= 0) return {};
  std::istringstream header(std::string(block, static_cast<std::size_t>(n)).c_str());
  std::string magic, host_key, host, pid_key, start_key;
  long pid = 0;
  unsigned long long start = 0;
  std::getline(header, magic);
  if (magic + "\n" != kMagic || !(header >> host_key >> host >> pid_key >> pid >> start_key >> start) ||
      host_key != "host" || pid_key != "pid" || start_key != "start" || pid <= 0)
    return {};  // not poet's: never touched
  if (host != this_host()) return {Owner::kRunning, pid, host};  // of another machine (a shared folder)
  const auto running_since = start_time_of(pid);
  return {locked || (running_since && *running_since == start) ? Owner::kRunning : Owner::kEnded, pid, host};
}

PageFile::~PageFile() {
  for (const Lane& lane : lanes_)
    if (lane.aio != 0) ::syscall(SYS_io_destroy, lane.aio);
  remove();
  ::close(fd_);
}

void PageFile::try_enable_direct_io() {
  // The bounce buffers' pages become resident only where a transfer uses them.
  const auto drop_bounces = [&] {
    for (Lane& lane : lanes_) lane.bounce.reset();
  };
  for (Lane& lane : lanes_) {
    lane.bounce.reset(static_cast<std::byte*>(std::aligned_alloc(kBlockSize, 2 * kBounceSize)));
    if (!lane.bounce) return drop_bounces();
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags | O_DIRECT) != 0) return drop_bounces();
  // Some file systems accept the flag but refuse the I/O (EINVAL), so try one block (the
  // one after the header).
  std::byte* probe = lanes_.front().bounce.get();
  std::memset(probe, 0, kBlockSize);
  const bool works = ::pwrite(fd_, probe, kBlockSize, kHeaderBytes) == static_cast<ssize_t>(kBlockSize) &&
                     ::pread(fd_, probe, kBlockSize, kHeaderBytes) == static_cast<ssize_t>(kBlockSize);
  if (!works) {
    ::fcntl(fd_, F_SETFL, flags);
    drop_bounces();
  }
  direct_io_ = works;
  // Linux AIO lets a transfer's copy and checksum overlap the device's work; without it
  // (io_setup refused, e.g. aio-max-nr reached) that lane's transfers are simply synchronous.
  for (Lane& lane : lanes_)
    if (works && ::syscall(SYS_io_setup, 1, &lane.aio) != 0) lane.aio = 0;
  if (::ftruncate(fd_, kHeaderBytes) != 0) {
    // Harmless: the probe block is simply overwritten by the first slot.
  }
}

void PageFile::remove() {
  if (removed_) return;
  removed_ = true;
  remove_on_interrupt_.reset();
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

std::string PageFile::write_at(std::size_t lane_index, std::uint64_t offset, std::span<const std::byte> data,
                               InjectedFault injected, std::uint32_t& crc) {
  const Lane& lane = lanes_.at(lane_index);
  POET_CHECK(offset % kBlockSize == 0, "page file offsets are block-aligned");
  offset += kHeaderBytes;
  crc = 0;
  if (std::string gone = check_still_there(0); !gone.empty()) return gone;
  FaultState fault{injected};
  std::uint64_t written = 0;
  if (!direct_io_) {
    // Chunk by chunk, so the checksum brings each chunk into the cache just before write(2)
    // copies it: the tensor crosses the memory bus once.
    for (std::size_t done = 0; done < data.size();) {
      const std::size_t chunk = std::min(kChunkSize, data.size() - done);
      crc = crc32_update(crc, data.subspan(done, chunk));
      const int err = write_fully(data.data() + done, chunk, offset + done, fault, written);
      if (err != 0) return write_failure(err, written, data.size());
      done += chunk;
    }
    return {};
  }
  // O_DIRECT: through the two halves of the bounce buffer, or straight from the tensor
  // (moves_directly). With AIO, one chunk is written by the device while the next is
  // copied and checksummed.
  const bool overlap = lane.aio != 0 && injected == InjectedFault::kNone;
  std::size_t pending = 0;  // bytes of the tensor in the write in flight; 0: none
  const std::byte* pending_from = nullptr;
  std::uint64_t pending_offset = 0;
  for (std::size_t done = 0, half = 0; done < data.size(); half ^= 1) {
    const std::size_t chunk = std::min(direct_chunk(data.size()), data.size() - done);
    const std::size_t padded = round_up(chunk, kBlockSize);
    // What the device writes from: the tensor itself (nothing writes it while the transfer
    // runs), or a bounce half the chunk is copied into.
    std::byte* from = lane.bounce.get() + half * kBounceSize;
    if (moves_directly(data.data() + done, chunk)) {
      from = const_cast<std::byte*>(data.data() + done);
    } else {
      std::memcpy(from, data.data() + done, chunk);
      std::memset(from + chunk, 0, padded - chunk);
    }
    crc = crc32_update(crc, {from, chunk});
    if (!overlap) {
      std::uint64_t chunk_written = 0;
      const int err = write_fully(from, padded, offset + done, fault, chunk_written);
      written += std::min<std::uint64_t>(chunk_written, chunk);
      if (err != 0) return write_failure(err, written, data.size());
    } else {
      if (pending != 0) {
        const int err = finish_async(lane, pending_from, pending, pending_offset, fault, written);
        pending = 0;
        if (err != 0) return write_failure(err, written, data.size());
      }
      if (const int err = start_async(lane, true, from, padded, offset + done); err != 0) {
        std::uint64_t chunk_written = 0;  // AIO refused: write this chunk the plain way
        const int failed = write_fully(from, padded, offset + done, fault, chunk_written);
        written += std::min<std::uint64_t>(chunk_written, chunk);
        if (failed != 0) return write_failure(failed, written, data.size());
      } else {
        pending = chunk, pending_from = from, pending_offset = offset + done;
      }
    }
    done += chunk;
  }
  if (pending != 0)
    if (const int err = finish_async(lane, pending_from, pending, pending_offset, fault, written); err != 0)
      return write_failure(err, written, data.size());
  return {};
}

std::string PageFile::read_at(std::size_t lane_index, std::uint64_t offset, std::span<std::byte> into,
                              InjectedFault injected, std::uint32_t& crc) {
  const Lane& lane = lanes_.at(lane_index);
  POET_CHECK(offset % kBlockSize == 0, "page file offsets are block-aligned");
  offset += kHeaderBytes;
  crc = 0;
  if (std::string gone = check_still_there(offset + into.size()); !gone.empty()) return gone;
  FaultState fault{injected};
  if (!direct_io_) {
    // Chunk by chunk, so the checksum reads what read(2) just put in the cache.
    for (std::size_t done = 0; done < into.size();) {
      const std::size_t chunk = std::min(kChunkSize, into.size() - done);
      const int err = read_fully(into.data() + done, chunk, chunk, offset + done, fault);
      if (err != 0) return read_failure(err, offset, into.size());
      crc = crc32_update(crc, into.subspan(done, chunk));
      done += chunk;
    }
    return {};
  }
  // O_DIRECT: with AIO the device reads the next chunk into one half of the bounce buffer,
  // or straight into the tensor (moves_directly), while the chunk before is checksummed
  // and copied out.
  const bool overlap = lane.aio != 0 && injected == InjectedFault::kNone;
  auto chunk_at = [&](std::size_t done) { return std::min(direct_chunk(into.size()), into.size() - done); };
  auto target = [&](std::size_t at, std::size_t half) {
    return moves_directly(into.data() + at, chunk_at(at)) ? into.data() + at : lane.bounce.get() + half * kBounceSize;
  };
  bool in_flight = false;  // a read of the chunk at `done` into the current half
  auto start = [&](std::size_t at, std::size_t half) {
    in_flight = start_async(lane, false, target(at, half), round_up(chunk_at(at), kBlockSize), offset + at) == 0;
  };
  if (overlap && !into.empty()) start(0, 0);
  for (std::size_t done = 0, half = 0; done < into.size(); half ^= 1) {
    const std::size_t chunk = chunk_at(done);
    std::byte* landing = target(done, half);  // the tensor itself, or a bounce half
    int err = 0;
    if (in_flight) {
      in_flight = false;
      const long got = wait_async(lane);
      if (got < 0) {
        err = static_cast<int>(-got);
      } else if (const auto have = static_cast<std::size_t>(got); have < chunk) {
        // A short read: at an unaligned point the file ended, else finish it the plain way.
        err = have % kBlockSize != 0 ? kEndOfFile
                                     : read_fully(landing + have, round_up(chunk, kBlockSize) - have, chunk - have,
                                                  offset + done + have, fault);
      }
    } else {
      err = read_fully(landing, round_up(chunk, kBlockSize), chunk, offset + done, fault);
    }
    if (err != 0) return read_failure(err, offset, into.size());
    if (overlap && done + chunk < into.size()) start(done + chunk, half ^ 1);
    crc = crc32_update(crc, {landing, chunk});
    if (landing != into.data() + done) std::memcpy(into.data() + done, landing, chunk);
    done += chunk;
  }
  return {};
}

int PageFile::start_async(const Lane& lane, bool write, std::byte* buffer, std::size_t size, std::uint64_t offset) {
  iocb request{};
  request.aio_fildes = static_cast<std::uint32_t>(fd_);
  request.aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
  request.aio_buf = reinterpret_cast<std::uint64_t>(buffer);
  request.aio_nbytes = size;
  request.aio_offset = static_cast<std::int64_t>(offset);
  iocb* requests[] = {&request};
  for (;;) {
    const long n = ::syscall(SYS_io_submit, lane.aio, 1, requests);
    if (n == 1) return 0;
    if (n < 0 && errno == EINTR) continue;
    return n < 0 ? errno : EAGAIN;
  }
}

long PageFile::wait_async(const Lane& lane) {
  io_event event{};
  for (;;) {
    const long n = ::syscall(SYS_io_getevents, lane.aio, 1, 1, &event, nullptr);
    if (n == 1) return static_cast<long>(event.res);
    if (n < 0 && errno == EINTR) continue;
    return -(n < 0 ? errno : EIO);
  }
}

// Waits for the write in flight (`chunk` bytes of the tensor at `offset`, padded, from
// `buffer`); finishes a short one the plain way. Returns 0 or the error as write_fully does.
int PageFile::finish_async(const Lane& lane, const std::byte* buffer, std::size_t chunk, std::uint64_t offset,
                           FaultState& fault, std::uint64_t& written) {
  const long got = wait_async(lane);
  if (got < 0) return static_cast<int>(-got);
  const std::size_t padded = round_up(chunk, kBlockSize), done = std::min(static_cast<std::size_t>(got), padded);
  std::uint64_t rest = 0;
  const int err = done == padded ? 0 : write_fully(buffer + done, padded - done, offset + done, fault, rest);
  written += std::min<std::uint64_t>(done + rest, chunk);
  return err;
}

std::string PageFile::write_failure(int err, std::uint64_t written, std::uint64_t total) const {
  if (err == ENOSPC || err == EDQUOT)
    return fmt::format("the storage is full ({}; {} of {} bytes written); free space on '{}' or choose another "
                       "place for the page file",
                       std::strerror(err), written, total, folder());
  if (err == kNoProgress)
    return fmt::format("short write: the storage accepted only {} of {} bytes (probably full); free space on "
                       "'{}' or choose another place for the page file",
                       written, total, folder());
  if (err == EFBIG)
    return fmt::format("the page file cannot grow ({}; {} of {} bytes written){}", std::strerror(err), written,
                       total, file_too_large_advice());
  if (err == EIO)
    return fmt::format("the storage device reported an I/O error ({}); check the device (dmesg) or choose "
                       "another place for the page file",
                       std::strerror(err));
  return fmt::format("write failed ({}); choose another place for the page file", std::strerror(err));
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
                       "another place for the page file",
                       std::strerror(err));
  return fmt::format("read failed ({}); check the storage device or choose another place for the page file",
                     std::strerror(err));
}

}  // namespace poet::paging

namespace poet {

void check_page_file_location(const std::string& requested, std::string_view option) {
  namespace fs = std::filesystem;
  const bool in_folder = requested.empty() || paging::is_directory(requested);
  const std::string folder = in_folder ? paging::absolute(requested.empty() ? "." : requested)
                                       : paging::parent_of(paging::absolute(requested));
  const auto refuse = [&](const std::string& why) {
    return InputError(fmt::format("{} '{}': {}; choose a writable folder on real storage for {}", option, requested,
                                  why, option));
  };
  std::error_code ec;
  const fs::file_status status = fs::status(folder, ec);
  if (!fs::exists(status)) throw refuse(fmt::format("the folder '{}' does not exist (create it)", folder));
  if (!fs::is_directory(status)) throw refuse(fmt::format("'{}' is not a folder", folder));
  if (const auto problem = new_file_problem(folder)) throw refuse(*problem);
  // The page file's own creation refuses such a file too (create_file), but only after planning.
  struct stat st {};
  if (in_folder || ::lstat(requested.c_str(), &st) != 0) return;
  const paging::PageFile::Owner owner = paging::PageFile::owner_of(requested);
  if (owner.kind == paging::PageFile::Owner::kRunning) {
    const std::string where = owner.host == paging::this_host() ? "" : fmt::format("on host '{}', ", owner.host);
    throw InputError(fmt::format("{} '{}' is the page file of a poet run still running ({}process {}); give this "
                                 "run another {}, or a folder for a file of its own",
                                 option, requested, where, owner.pid, option));
  }
  if (owner.kind == paging::PageFile::Owner::kNotPoets)
    throw InputError(fmt::format("{} '{}': a file of that name exists, and poet overwrites only a page file of its "
                                 "own left by a run that ended; remove it, or name a new file or a folder",
                                 option, requested));
}

}  // namespace poet
