// The executor's side of the Pager promise (pager.h): a tensor with a transfer in flight
// is not read before its page-in ends, and its bytes are not reused before its transfer
// ends. Keeps which nodes have a transfer in flight and which freed arena bytes a transfer
// still touches, in tables sized once, so a step allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "poet/paging/pager.h"

namespace poet::runtime::detail {

class TransferTracker {
 public:
  TransferTracker(Pager& pager, std::size_t nodes);

  void reset();  // a new step: nothing in flight
  void started(NodeId v) { in_flight_[static_cast<std::size_t>(v)] = 1; }
  // Waits for v's transfer if it has one in flight (PagerError if it failed).
  void finish(NodeId v) {
    if (in_flight_[static_cast<std::size_t>(v)]) wait(v);
  }
  // Waits for v's last transfer unconditionally (a no-op for the pager if none).
  void wait(NodeId v);
  // v's buffer [begin, end) is released; a transfer still in flight keeps it busy.
  void released(NodeId v, std::int64_t begin, std::int64_t end);
  // New data goes to [begin, end): waits for every transfer still touching those bytes.
  void claim(std::int64_t begin, std::int64_t end);

 private:
  struct BusyRange {
    std::int64_t begin, end;
    NodeId node;
  };
  Pager& pager_;
  std::vector<std::uint8_t> in_flight_;  // per node
  std::vector<BusyRange> busy_;          // capacity: one per node, reserved up front
};

}  // namespace poet::runtime::detail
