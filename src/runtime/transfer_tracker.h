// The executor's side of the Pager promise (pager.h): a tensor with a page-in in flight is
// not read before the page-in ends, and bytes a transfer still reads or writes are not
// given new data before it ends. Nothing else waits: a tensor being paged out is read by
// the computes that need it meanwhile (the page-out only reads it too), and since a pager
// orders the transfers that touch the same bytes as they were started, a page-in or
// page-out never waits on the stepping thread for the transfers before it. Keeps which nodes have a transfer in
// flight and which freed arena bytes a transfer still touches, in tables sized once, so a
// step allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "poet/paging/pager.h"

namespace poet::runtime::detail {

class TransferTracker {
 public:
  TransferTracker(Pager& pager, std::size_t nodes);

  void reset();  // a new step: nothing in flight
  void started_page_out(NodeId v) { in_flight_[static_cast<std::size_t>(v)] |= kReading; }
  void started_page_in(NodeId v) { in_flight_[static_cast<std::size_t>(v)] |= kWriting; }
  // Before v is read: waits for a page-in of v still arriving (PagerError if it failed).
  void before_read(NodeId v) {
    if (in_flight_[static_cast<std::size_t>(v)] & kWriting) wait(v);
  }
  // Before a compute writes over v's bytes in place: waits for a page-out of v still reading them.
  void before_overwrite(NodeId v) {
    if (in_flight_[static_cast<std::size_t>(v)] & kReading) wait(v);
  }
  // v's buffer [begin, end) is released; a transfer still in flight keeps it busy.
  void released(NodeId v, std::int64_t begin, std::int64_t end);
  // New data goes to [begin, end): waits for every transfer still touching those bytes.
  void claim(std::int64_t begin, std::int64_t end);
  // Seconds spent in waits since reset().
  double waited_s() const { return waited_s_; }

 private:
  static constexpr std::uint8_t kReading = 1, kWriting = 2;  // a page-out, a page-in
  struct BusyRange {
    std::int64_t begin, end;
    NodeId node;
  };
  // Waits for v's last transfer, which ends after every earlier one of v.
  void wait(NodeId v);

  Pager& pager_;
  std::vector<std::uint8_t> in_flight_;  // per node: kReading | kWriting
  std::vector<BusyRange> busy_;          // never beyond the capacity reserved up front
  double waited_s_ = 0;
};

}  // namespace poet::runtime::detail
