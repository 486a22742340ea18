// A seam for tests to make a FilePager's storage misbehave on purpose: the faults that are
// hard to provoke for real (a full disk, a failing device) and a hook that lets a test hold
// a transfer in flight. The default injects nothing; production code never sets it, and the
// I/O thread consults it with a counter comparison per transfer, not per byte.
#pragma once

#include <cstddef>
#include <functional>

#include "poet/graph/graph.h"

namespace poet {

enum class PageTransfer { kOut, kIn };

struct FaultInjector {
  enum class WriteFault {
    kDiskFull,    // the first write(2) of the transfer fails with ENOSPC
    kShortWrite,  // half the bytes are written for real, then ENOSPC (what a filling disk does)
    kIoError,     // the first write(2) fails with EIO
  };
  // The k-th page-out (counting from 1 over the pager's life) fails; 0 means none.
  std::size_t fail_write = 0;
  WriteFault write_fault = WriteFault::kDiskFull;
  // The k-th page-in (counting from 1) fails with EIO; 0 means none.
  std::size_t fail_read = 0;
  // Runs on the I/O thread just before each transfer touches the file. A test blocks in it
  // to observe a transfer that has started but not finished.
  std::function<void(NodeId, PageTransfer)> before_transfer;
};

}  // namespace poet
