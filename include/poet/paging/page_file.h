// The one file on secondary storage that holds a FilePager's stored copies, and the raw,
// synchronous reads and writes on it. Failures come back as text (cause and what to do)
// rather than exceptions, because they happen on the I/O thread and travel to whoever
// waits for the transfer; the FilePager adds which tensor it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "poet/util/interrupt.h"

namespace poet::paging {

// Which fault, if any, a FaultInjector asked this transfer to suffer.
enum class InjectedFault { kNone, kDiskFull, kShortWrite, kWriteIoError, kReadIoError };

class PageFile {
 public:
  // Creates a fresh file. `requested` empty: a uniquely named file in the working
  // directory; an existing directory: a uniquely named file in it; anything else: that
  // path, which must not exist yet (poet never overwrites a file it did not create) -
  // unless it is a stale page file of poet's own: one whose header names a process of
  // this host that no longer runs (a run killed with kill -9), and which no process holds
  // locked (each run holds flock on its file), which is replaced. A new file in a folder
  // first removes the folder's stale "poet-pages-*" files, which would otherwise pile up.
  // The file is removed when this object is destroyed, and on SIGINT/SIGTERM (interrupt.h).
  // With `want_direct_io`, opens with O_DIRECT if the file system accepts it and silently
  // falls back to buffered I/O otherwise. `lanes` transfers may run at once, each on its
  // own lane (0 .. lanes-1), from one thread per lane. Throws IoError naming the path and the fix.
  PageFile(const std::string& requested, bool want_direct_io, std::size_t lanes = 1);
  // Closes the file and removes it.
  ~PageFile();
  PageFile(const PageFile&) = delete;
  PageFile& operator=(const PageFile&) = delete;

  const std::string& path() const { return path_; }
  bool direct_io() const { return direct_io_; }
  std::size_t lanes() const { return lanes_.size(); }  // at least 1
  // Offsets passed to write_at / read_at must be multiples of this.
  static constexpr std::uint64_t kBlockSize = 4096;
  // The first block holds the header that marks the file as poet's ("poet page file",
  // the creator's host, pid and start time); copies live after it, so write_at's and
  // read_at's offset 0 is the file's byte kHeaderBytes.
  static constexpr std::uint64_t kHeaderBytes = kBlockSize;
  // Whose file `path` is, as its header says.
  struct Owner {
    enum Kind { kNotPoets, kEnded, kRunning } kind = kNotPoets;  // kRunning: or of another host, which may run
    long pid = 0;
    std::string host;
  };
  static Owner owner_of(const std::string& path);
  // Whether `path` is a page file of poet's whose creator no longer runs.
  static bool is_stale(const std::string& path) { return owner_of(path).kind == Owner::kEnded; }

  // Write `data` at `offset` / read `into` from `offset`, completely, and set `crc` to the
  // CRC-32 of the bytes written / read (computed on the way, while they are in the cache).
  // Empty on success, otherwise why it failed and what the user can do about it. Transfers
  // on different lanes may run at the same time on bytes of the file that do not overlap.
  std::string write_at(std::size_t lane, std::uint64_t offset, std::span<const std::byte> data, InjectedFault fault,
                       std::uint32_t& crc);
  std::string read_at(std::size_t lane, std::uint64_t offset, std::span<std::byte> into, InjectedFault fault,
                      std::uint32_t& crc);

  // Removes the file from its folder now, if the path still names this file (someone may
  // have removed it and created another there). The open descriptor stays usable.
  void remove();

 private:
  struct FaultState {
    InjectedFault kind;
    int calls = 0;
  };
  struct AlignedFree {
    void operator()(std::byte* p) const;
  };
  // What one transfer in flight uses of its own. O_DIRECT needs aligned memory; callers'
  // tensors are not, so transfers go through `bounce` (two halves, see
  // file_pager_page_file.cpp). `aio` is the Linux AIO context (aio_context_t) of O_DIRECT
  // transfers, with one request in flight at a time; 0: none.
  struct Lane {
    std::unique_ptr<std::byte, AlignedFree> bounce;
    unsigned long aio = 0;
  };

  void try_enable_direct_io();
  std::string check_still_there(std::uint64_t needed_size) const;
  int write_fully(const std::byte* data, std::size_t size, std::uint64_t offset, FaultState& fault, std::uint64_t& written);
  int read_fully(std::byte* into, std::size_t size, std::size_t needed, std::uint64_t offset, FaultState& fault);
  // Linux AIO on the O_DIRECT descriptor, one request in flight at a time per lane.
  int start_async(const Lane& lane, bool write, std::byte* buffer, std::size_t size, std::uint64_t offset);
  long wait_async(const Lane& lane);  // the request's result: bytes transferred, or -errno
  int finish_async(const Lane& lane, const std::byte* buffer, std::size_t chunk, std::uint64_t offset,
                   FaultState& fault, std::uint64_t& written);
  std::string write_failure(int err, std::uint64_t written, std::uint64_t total) const;
  std::string read_failure(int err, std::uint64_t offset, std::uint64_t size) const;
  std::string folder() const;

  std::string path_;
  int fd_ = -1;
  std::unique_ptr<RemoveOnInterrupt> remove_on_interrupt_;
  bool direct_io_ = false;
  bool removed_ = false;
  std::vector<Lane> lanes_;
};

}  // namespace poet::paging
