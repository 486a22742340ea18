// Secondary storage for paged-out tensors, as the executor sees it. Transfers are
// asynchronous so they overlap compute as the transfer planner intends: a page-out or
// page-in starts, the executor goes on, and waits for that tensor's transfer only when it
// must (before reusing the RAM a page-out reads from, before computing with a paged-in
// tensor). The executor never frees or overwrites a buffer with a transfer in flight.
//
// Transfers take effect in the order they are started: a transfer touches no byte (of RAM
// or of storage) that a transfer started earlier still writes, or still reads where this
// one writes, and wait() reports a transfer complete only once every transfer started
// before it is complete too. So the executor starts a page-in without waiting for the
// page-out of the copy it reads, or for transfers still touching the bytes it fills; the
// stepping thread never blocks to issue a transfer.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>

#include "poet/graph/graph.h"
#include "poet/util/error.h"

namespace poet {

// A transfer failed: disk full, an I/O error, the file removed or truncated, a checksum
// mismatch. The message names the tensor, the file and the cause, and what to do. A
// failure of the system around poet, as IoError is: the command exits 1 with the message.
class PagerError : public IoError {
 public:
  using IoError::IoError;
};

class Pager {
 public:
  virtual ~Pager() = default;
  // Starts writing `data` as the stored copy of `node` (replacing any earlier copy). `data`
  // must stay unchanged until wait(node) returns.
  virtual void start_page_out(NodeId node, std::span<const std::byte> data) = 0;
  // Starts reading the stored copy of `node` into `into` (of the size it was written with).
  virtual void start_page_in(NodeId node, std::span<std::byte> into) = 0;
  // Blocks until the transfer of `node` started last is complete; throws PagerError if it
  // failed (a page-in also verifies the copy's checksum). No-op if none is in flight.
  virtual void wait(NodeId node) = 0;
  // Waits for every transfer; throws the first failure.
  virtual void wait_all() = 0;
  // Bytes written and read so far.
  virtual std::size_t bytes_paged_out() const = 0;
  virtual std::size_t bytes_paged_in() const = 0;
  // Seconds so far during which storage was moving the bytes of at least one transfer, up
  // to the last that ended: transfers side by side count once, time queued not at all. The
  // simulator's bus busy time (SimulationResult::transfer_time_s) is its prediction. 0 for
  // a pager without storage to time (MemoryPager).
  virtual double seconds_storage_busy() const { return 0; }
  // The most transfers one step starts (the executor's plan; it waits for all of them at the
  // step's end). A pager that queues them sizes its queue here, so that no step allocates,
  // however far storage falls behind the kernels. Default: nothing to size.
  virtual void expect_transfers_per_step(std::size_t transfers) { (void)transfers; }
};

}  // namespace poet
