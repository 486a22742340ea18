// A Pager that keeps paged-out tensors in one real file on secondary storage.
//
// Transfers run in order on one dedicated I/O thread, so they overlap the caller's compute
// and a page-in queued behind a page-out of the same tensor reads what was written. Every
// stored copy carries a CRC-32 that its page-in verifies. A failure (full disk, I/O error,
// file removed or truncated underneath, checksum mismatch) is reported by wait()/wait_all()
// as a PagerError naming the tensor, the file, the cause and the fix. The first failure
// also stops the pager: the file is removed at once and no later transfer touches storage
// (each reports that an earlier one failed), so a failed step never reads back stale or
// partial data. Destroying the pager removes the file in every case.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "poet/paging/file_pager_faults.h"
#include "poet/paging/page_slots.h"
#include "poet/paging/pager.h"

namespace poet {

namespace paging {
class PageFile;
enum class InjectedFault;
}  // namespace paging

// Checks, before any planning, that a page file can be made where `requested` (a
// FilePagerOptions::path; empty: the working folder) says: its folder exists, is a folder
// and takes a new file (tried by making and removing one: /proc passes every permission
// check and takes none). Throws InputError naming --page-file, the folder and the fix.
void check_page_file_location(const std::string& requested);

struct FilePagerOptions {
  // Empty: a uniquely named file in the working directory. An existing directory: a
  // uniquely named file in it. Otherwise a new file at this path (it must not exist).
  std::string path;
  // Bypass the page cache (O_DIRECT) if the file system supports it; see uses_direct_io().
  bool direct_io = false;
  // For tests only.
  FaultInjector faults;
};

class FilePager final : public Pager {
 public:
  // Creates the file and starts the I/O thread. Throws IoError if the file cannot be
  // created (missing folder, no permission, the path exists).
  explicit FilePager(FilePagerOptions options = {});
  // Abandons transfers not yet started, finishes the one running, and removes the file.
  // Buffers of an abandoned page-in keep their old contents.
  ~FilePager() override;
  FilePager(const FilePager&) = delete;
  FilePager& operator=(const FilePager&) = delete;

  // Throws PagerError at once (not at wait) for misuse: a page-in of a tensor never paged
  // out, or into a buffer of a different size than was written.
  void start_page_out(NodeId node, std::span<const std::byte> data) override;
  void start_page_in(NodeId node, std::span<std::byte> into) override;
  void wait(NodeId node) override;
  void wait_all() override;
  std::size_t bytes_paged_out() const override { return bytes_out_.load(std::memory_order_relaxed); }
  std::size_t bytes_paged_in() const override { return bytes_in_.load(std::memory_order_relaxed); }

  const std::string& path() const;
  // Whether the file was opened with O_DIRECT (asked for and supported).
  bool uses_direct_io() const;
  // Bytes of file the stored copies occupy at most (slots are whole 4 KiB blocks), with
  // the file's header block.
  std::uint64_t file_capacity() const;

 private:
  struct Request {
    PageTransfer kind = PageTransfer::kOut;
    NodeId node = -1;
    std::uint64_t ticket = 0;
    std::uint64_t offset = 0;
    std::byte* bytes = nullptr;  // read from for a page-out, written to for a page-in
    std::size_t size = 0;
  };
  // What the pager knows of one tensor. Guarded by mutex_.
  struct Record {
    bool has_copy = false;  // a page-out was started
    std::size_t size = 0;   // of the copy the latest page-out writes
    paging::Slot slot;
    std::uint32_t crc = 0;         // of the last completed page-out (set on the I/O thread)
    std::uint64_t last_ticket = 0;  // of the transfer started last; 0: never
    std::string failure;            // the first failed transfer of this tensor
  };

  Record& record(NodeId node);  // requires mutex_
  void enqueue(const Request& request);  // requires mutex_; the caller notifies work_ready_ after unlocking
  void run_io_thread();
  std::string perform(const Request& request, std::uint32_t expected_crc, std::uint32_t& crc);
  paging::InjectedFault injected_fault_for(PageTransfer kind);
  std::string describe(const Request& request, const std::string& cause) const;

  const FaultInjector faults_;
  std::unique_ptr<paging::PageFile> file_;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable transfer_done_;
  std::vector<Record> records_;  // indexed by NodeId
  paging::SlotAllocator slots_;
  // The queue: a ring buffer that only grows, so steady-state paging allocates nothing.
  std::vector<Request> queue_;
  std::size_t queue_head_ = 0;
  std::size_t queue_size_ = 0;
  std::uint64_t next_ticket_ = 1;
  // Transfers complete in ticket order, so one number says which are done.
  std::uint64_t completed_through_ = 0;
  std::string first_failure_;  // non-empty once the pager has stopped
  bool stopping_ = false;

  // Only the I/O thread touches these.
  std::size_t writes_started_ = 0;
  std::size_t reads_started_ = 0;

  std::atomic<std::size_t> bytes_out_{0};
  std::atomic<std::size_t> bytes_in_{0};
  std::thread io_thread_;  // last: starts after everything it uses exists
};

}  // namespace poet
