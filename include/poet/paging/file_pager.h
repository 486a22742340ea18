// A Pager that keeps paged-out tensors in one real file on secondary storage.
//
// Transfers run on dedicated I/O threads, so they overlap the caller's compute. They start
// in the order they were asked for, each on the first free thread, once no transfer still
// running touches its bytes in a way whose order matters (pager.h): a page-in queued behind
// a page-out of the same tensor reads what was written, while transfers of different
// tensors move side by side (a storage device serves small requests faster several at a
// time; docs/BENCHMARKS.md). Every
// stored copy carries a CRC-32 that its page-in verifies. A failure (full disk, I/O error,
// file removed or truncated underneath, checksum mismatch) is reported by wait()/wait_all()
// as a PagerError naming the tensor, the file, the cause and the fix. The first failure
// also stops the pager: no transfer starts on storage after it, the file is removed as soon
// as every transfer started before it has ended (which the failure does not disturb),
// and every transfer started after the failed one reports that an earlier one failed, so a
// failed step never reads back stale or partial data. Destroying the pager removes the
// file in every case.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "poet/paging/busy_time.h"
#include "poet/paging/file_pager_faults.h"
#include "poet/paging/page_slots.h"
#include "poet/paging/pager.h"
#include "poet/paging/transfer_order.h"

namespace poet {

namespace paging {
class PageFile;
enum class InjectedFault;
}  // namespace paging

// Checks, before any planning or measuring, that a page file can be made where `requested`
// (a FilePagerOptions::path, or a folder; empty: the working folder) says: its folder exists,
// is a folder and takes a new file (tried by making and removing one: /proc passes every
// permission check and takes none). Throws InputError naming `option`, the folder and the fix.
void check_page_file_location(const std::string& requested, std::string_view option = "--page-file");

struct FilePagerOptions {
  // Empty: a uniquely named file in the working directory. An existing directory: a
  // uniquely named file in it. Otherwise a new file at this path (it must not exist).
  std::string path;
  // Bypass the page cache (O_DIRECT) if the file system supports it; see uses_direct_io().
  bool direct_io = false;
  // Transfers in flight at once, one per I/O thread (at least 1). Two, measured on the
  // 2-core VM (resnet18_cifar, batch 8, Capuchin, runs alternated): at 70% the steps waited
  // 0-0.16 ms for transfers against 0.09-0.53 ms with one thread, and ran 0.04-0.25 ms
  // faster; at 50%, no clear change. Four threads made the steps 0.3-0.6 ms slower than one:
  // their wake-ups took the cores from the kernels (docs/BENCHMARKS.md, "Two transfers in
  // flight").
  std::size_t io_threads = kDefaultIoThreads;
  static constexpr std::size_t kDefaultIoThreads = 2;
  // For tests only.
  FaultInjector faults;
};

class FilePager final : public Pager {
 public:
  // Creates the file and starts the I/O threads. Throws IoError if the file cannot be
  // created (missing folder, no permission, the path exists).
  explicit FilePager(FilePagerOptions options = {});
  // Abandons transfers not yet started, finishes those running, and removes the file.
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
  double seconds_storage_busy() const override;
  void expect_transfers_per_step(std::size_t transfers) override;

  const std::string& path() const;
  // Whether the file was opened with O_DIRECT (asked for and supported).
  bool uses_direct_io() const;
  // Bytes of file the stored copies occupy at most (slots are whole 4 KiB blocks), with
  // the file's header block.
  std::uint64_t file_capacity() const;

  // The size the file grows to when each of these tensors (a plan's paged tensors: each
  // keeps one copy, in its own slot) has been stored.
  static std::uint64_t file_bytes_for(std::span<const std::uint64_t> tensor_bytes);

 private:
  // A transfer taken from the queue and not yet reported complete.
  struct Started {
    paging::Transfer request;
    bool done = false;    // its bytes have moved, or it failed
    std::string failure;  // set when done
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
  void enqueue(const paging::Transfer& request);  // requires mutex_; the caller then calls wake_io_thread
  void grow_queue(std::size_t capacity);           // requires mutex_; capacity >= the transfers queued
  bool head_can_start() const;  // requires mutex_
  // Unlocks `lock` (on mutex_) and wakes one idle I/O thread if the next transfer may start.
  void wake_io_thread(std::unique_lock<std::mutex>& lock);
  // Marks `ticket` done and reports, in ticket order, every transfer whose predecessors
  // are all done. Requires mutex_.
  void finish(std::uint64_t ticket, std::string failure);
  void run_io_thread(std::size_t lane);
  void stop_io_threads();
  std::string perform(std::size_t lane, const paging::Transfer& request, paging::InjectedFault fault,
                      std::uint32_t expected_crc, std::uint32_t& crc);
  paging::InjectedFault injected_fault_for(PageTransfer kind);
  std::string describe(const paging::Transfer& request, const std::string& cause) const;

  const FaultInjector faults_;
  std::unique_ptr<paging::PageFile> file_;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable transfer_done_;
  std::vector<Record> records_;  // indexed by NodeId
  paging::SlotAllocator slots_;
  // The queue: a ring buffer that only grows, so steady-state paging allocates nothing.
  std::vector<paging::Transfer> queue_;
  std::size_t queue_head_ = 0;
  std::size_t queue_size_ = 0;
  std::uint64_t next_ticket_ = 1;
  // Started transfers not yet reported complete, in ticket order; the capacity only grows.
  std::vector<Started> started_;
  // Transfers are reported complete in ticket order, so one number says which are done.
  std::uint64_t completed_through_ = 0;
  bool failed_ = false;        // a transfer failed: none starts on storage any more
  std::string first_failure_;  // of the earliest failed ticket, once reported
  bool stopping_ = false;
  // Transfers started so far, counted in ticket order for the fault injector.
  std::size_t writes_started_ = 0;
  std::size_t reads_started_ = 0;

  std::atomic<std::size_t> bytes_out_{0};
  std::atomic<std::size_t> bytes_in_{0};
  paging::BusyTime storage_busy_;  // guarded by mutex_
  std::vector<std::thread> io_threads_;  // last: they start after everything they use exists
};

}  // namespace poet
