#include "poet/paging/file_pager.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "poet/paging/page_file.h"
#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {

using paging::InjectedFault;

namespace {

// The I/O thread's nice value, where the process may raise a thread's priority (root,
// CAP_SYS_NICE, or an RLIMIT_NICE that allows it; else as far as RLIMIT_NICE allows, or
// not at all). Each transfer wakes the thread twice, to submit the next request and to take
// the device's answer, for a few tens of microseconds of CPU; at nice 0, with the kernels
// on every core, it waited for a compute thread's time slice at each wake-up and the
// transfer queue fell behind the plan. resnet18_cifar at 2 threads, Capuchin 50% and 70%,
// 8 runs each: the stepping thread blocked on transfers 0.4-4.6 ms a step (median 1.6 ms)
// at nice 0 and 0.1-1.3 ms (median 0.5 ms) at -10, and Capuchin 50%'s step over
// checkpoint-all's went from 4.3-9.7 ms to 3.8-5.2 ms (docs/BENCHMARKS.md). The thread
// sleeps most of a step, so the kernels lose no more than the CPU it needs.
constexpr int kIoThreadNice = -10;

void raise_io_thread_priority() {
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  if (::setpriority(PRIO_PROCESS, tid, kIoThreadNice) == 0) return;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NICE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  const int floor = 20 - static_cast<int>(limit.rlim_cur);  // the lowest nice RLIMIT_NICE allows
  if (floor < 0) ::setpriority(PRIO_PROCESS, tid, std::max(floor, kIoThreadNice));  // failing: stays at nice 0
}

}  // namespace

FilePager::FilePager(FilePagerOptions options)
    : faults_(std::move(options.faults)),
      file_(std::make_unique<paging::PageFile>(options.path, options.direct_io, options.io_threads)),
      slots_(paging::PageFile::kBlockSize),
      queue_(16) {
  started_.reserve(2 * file_->lanes());
  try {
    for (std::size_t lane = 0; lane < file_->lanes(); ++lane) io_threads_.emplace_back([this, lane] { run_io_thread(lane); });
  } catch (...) {  // a thread could not start: the ones running must end before the members go
    stop_io_threads();
    throw;
  }
}

FilePager::~FilePager() {
  stop_io_threads();
  // file_'s destructor removes the file.
}

void FilePager::stop_io_threads() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& thread : io_threads_) thread.join();
  io_threads_.clear();
}

const std::string& FilePager::path() const { return file_->path(); }
bool FilePager::uses_direct_io() const { return file_->direct_io(); }

std::uint64_t FilePager::file_capacity() const {
  std::lock_guard lock(mutex_);
  return paging::PageFile::kHeaderBytes + slots_.high_water();
}

std::uint64_t FilePager::file_bytes_for(std::span<const std::uint64_t> tensor_bytes) {
  constexpr std::uint64_t block = paging::PageFile::kBlockSize;
  std::uint64_t total = paging::PageFile::kHeaderBytes;
  for (const std::uint64_t bytes : tensor_bytes) total += std::max<std::uint64_t>(1, (bytes + block - 1) / block) * block;
  return total;
}

FilePager::Record& FilePager::record(NodeId node) {
  POET_CHECK(node >= 0, "paged tensors are nodes of the graph");
  // Grows on a tensor's first page-out only, so steady-state steps allocate nothing here.
  if (static_cast<std::size_t>(node) >= records_.size()) records_.resize(static_cast<std::size_t>(node) + 1);
  return records_[static_cast<std::size_t>(node)];
}

void FilePager::grow_queue(std::size_t capacity) {
  std::vector<paging::Transfer> larger(capacity);
  for (std::size_t i = 0; i < queue_size_; ++i) larger[i] = queue_[(queue_head_ + i) % queue_.size()];
  queue_ = std::move(larger);
  queue_head_ = 0;
}

void FilePager::expect_transfers_per_step(std::size_t transfers) {
  std::lock_guard lock(mutex_);
  if (transfers > queue_.size()) grow_queue(transfers);
}

void FilePager::enqueue(const paging::Transfer& request) {
  if (queue_size_ == queue_.size()) grow_queue(queue_.size() * 2);
  queue_[(queue_head_ + queue_size_) % queue_.size()] = request;
  ++queue_size_;
}

void FilePager::start_page_out(NodeId node, std::span<const std::byte> data) {
  std::unique_lock lock(mutex_);
  Record& r = record(node);
  // Keep the slot when the new copy fits (the same tensor paged out again, step after step).
  if (!r.has_copy || data.size() > r.slot.capacity) {
    slots_.release(r.slot);
    r.slot = slots_.allocate(data.size());
  }
  r.has_copy = true;
  r.size = data.size();
  r.last_ticket = next_ticket_++;
  // The I/O thread only reads through this pointer for a page-out.
  enqueue({PageTransfer::kOut, node, r.last_ticket, r.slot.offset, const_cast<std::byte*>(data.data()), data.size()});
  wake_io_thread(lock);
}

void FilePager::start_page_in(NodeId node, std::span<std::byte> into) {
  std::unique_lock lock(mutex_);
  const bool known = node >= 0 && static_cast<std::size_t>(node) < records_.size() &&
                     records_[static_cast<std::size_t>(node)].has_copy;
  if (!known)
    throw PagerError(fmt::format("page-in of tensor {} from '{}': the tensor was never paged out, so there is "
                                 "no copy to read (a bug in the caller: a page-in must follow a page-out)",
                                 node, path()));
  Record& r = records_[static_cast<std::size_t>(node)];
  if (into.size() != r.size)
    throw PagerError(fmt::format("page-in of tensor {} from '{}': the buffer has {} bytes but the stored copy "
                                 "has {} (a bug in the caller)",
                                 node, path(), into.size(), r.size));
  r.last_ticket = next_ticket_++;
  enqueue({PageTransfer::kIn, node, r.last_ticket, r.slot.offset, into.data(), into.size()});
  wake_io_thread(lock);
}

void FilePager::wait(NodeId node) {
  std::unique_lock lock(mutex_);
  if (node < 0 || static_cast<std::size_t>(node) >= records_.size()) return;
  const std::uint64_t ticket = records_[static_cast<std::size_t>(node)].last_ticket;
  transfer_done_.wait(lock, [&] { return completed_through_ >= ticket; });
  const Record& r = records_[static_cast<std::size_t>(node)];
  if (!r.failure.empty()) throw PagerError(r.failure);
}

double FilePager::seconds_storage_busy() const {
  std::lock_guard lock(mutex_);
  return storage_busy_.seconds();
}

void FilePager::wait_all() {
  std::unique_lock lock(mutex_);
  const std::uint64_t last = next_ticket_ - 1;
  transfer_done_.wait(lock, [&] { return completed_through_ >= last; });
  if (!first_failure_.empty()) throw PagerError(first_failure_);
}

void FilePager::wake_io_thread(std::unique_lock<std::mutex>& lock) {
  const bool wake = head_can_start();
  lock.unlock();
  if (wake) work_ready_.notify_one();  // unlocked: the thread woken need not wait for the lock
}

bool FilePager::head_can_start() const {
  if (queue_size_ == 0) return false;
  const paging::Transfer& head = queue_[queue_head_];
  return std::none_of(started_.begin(), started_.end(),
                      [&](const Started& s) { return !s.done && paging::must_follow(head, s.request); });
}

void FilePager::finish(std::uint64_t ticket, std::string failure) {
  auto it = std::find_if(started_.begin(), started_.end(), [&](const Started& s) { return s.request.ticket == ticket; });
  it->done = true;
  it->failure = std::move(failure);
  if (!it->failure.empty()) failed_ = true;  // no transfer starts on storage any more
  // Reported in ticket order: a transfer that ran beside an earlier one that failed reports
  // that failure too, as if it had queued behind it.
  while (!started_.empty() && started_.front().done) {
    Started& s = started_.front();
    const paging::Transfer& request = s.request;
    if (!first_failure_.empty()) {
      s.failure = describe(request, "abandoned because an earlier transfer failed: " + first_failure_);
    } else if (!s.failure.empty()) {
      first_failure_ = s.failure;
      // The step is lost; take the file away now rather than when the pager is destroyed.
      // Not before: a transfer started earlier, still running, must not fail for it.
      file_->remove();
    } else {
      (request.kind == PageTransfer::kOut ? bytes_out_ : bytes_in_).fetch_add(request.size, std::memory_order_relaxed);
    }
    Record& r = records_[static_cast<std::size_t>(request.node)];
    if (!s.failure.empty() && r.failure.empty()) r.failure = std::move(s.failure);
    completed_through_ = request.ticket;
    started_.erase(started_.begin());
  }
}

void FilePager::run_io_thread(std::size_t lane) {
  raise_io_thread_priority();
  std::unique_lock lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [&] { return stopping_ || head_can_start(); });
    if (stopping_) return;
    const paging::Transfer request = queue_[queue_head_];
    queue_head_ = (queue_head_ + 1) % queue_.size();
    --queue_size_;
    started_.push_back({request, false, {}});
    const InjectedFault fault = injected_fault_for(request.kind);  // counted in ticket order
    std::string failure;
    if (!failed_) {
      // Every page-out of this tensor before a page-in has ended (must_follow) and set crc.
      const std::uint32_t expected_crc = records_[static_cast<std::size_t>(request.node)].crc;
      std::uint32_t crc = 0;
      storage_busy_.began(paging::BusyTime::Clock::now());
      wake_io_thread(lock);  // the next transfer may run beside this one
      failure = perform(lane, request, fault, expected_crc, crc);
      lock.lock();
      storage_busy_.ended(paging::BusyTime::Clock::now());
      // records_ may have grown meanwhile; no later page-in of this tensor has started.
      if (failure.empty() && request.kind == PageTransfer::kOut) records_[static_cast<std::size_t>(request.node)].crc = crc;
    }
    finish(request.ticket, std::move(failure));
    // This thread takes the next transfer itself if it may start now; another is woken only
    // for the one after (above), as every wake-up takes a core from the kernels.
    lock.unlock();
    transfer_done_.notify_all();  // unlocked: a woken waiter need not wait for the lock
    lock.lock();
  }
}

InjectedFault FilePager::injected_fault_for(PageTransfer kind) {
  if (kind == PageTransfer::kIn) return ++reads_started_ == faults_.fail_read ? InjectedFault::kReadIoError : InjectedFault::kNone;
  if (++writes_started_ != faults_.fail_write) return InjectedFault::kNone;
  switch (faults_.write_fault) {
    case FaultInjector::WriteFault::kDiskFull: return InjectedFault::kDiskFull;
    case FaultInjector::WriteFault::kShortWrite: return InjectedFault::kShortWrite;
    case FaultInjector::WriteFault::kIoError: return InjectedFault::kWriteIoError;
  }
  return InjectedFault::kNone;
}

// Runs on I/O thread `lane` without the lock. Returns the failure message, empty on success.
std::string FilePager::perform(std::size_t lane, const paging::Transfer& request, InjectedFault fault,
                               std::uint32_t expected_crc, std::uint32_t& crc) {
  if (faults_.before_transfer) faults_.before_transfer(request.node, request.kind);
  std::string cause;
  if (request.kind == PageTransfer::kOut) {
    const std::span<const std::byte> data(request.bytes, request.size);
    cause = file_->write_at(lane, request.offset, data, fault, crc);
  } else {
    const std::span<std::byte> into(request.bytes, request.size);
    std::uint32_t actual = 0;
    cause = file_->read_at(lane, request.offset, into, fault, actual);
    if (cause.empty()) {
      if (actual != expected_crc)
        cause = fmt::format("checksum mismatch: the copy read back has CRC-32 {:08x} but the one written had "
                            "{:08x} (the file was modified underneath or the storage corrupted it); check the "
                            "storage device or choose another place for the page file, then rerun the step",
                            actual, expected_crc);
    }
  }
  return cause.empty() ? cause : describe(request, cause);
}

std::string FilePager::describe(const paging::Transfer& request, const std::string& cause) const {
  const bool out = request.kind == PageTransfer::kOut;
  return fmt::format("{} of tensor {} {} '{}' failed: {}", out ? "page-out" : "page-in", request.node,
                     out ? "to" : "from", file_->path(), cause);
}

}  // namespace poet
