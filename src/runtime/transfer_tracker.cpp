#include "transfer_tracker.h"

#include <algorithm>
#include <chrono>

namespace poet::runtime::detail {

TransferTracker::TransferTracker(Pager& pager, std::size_t nodes) : pager_(pager), in_flight_(nodes, 0) {
  busy_.reserve(std::max<std::size_t>(nodes, 1));
}

void TransferTracker::reset() {
  std::fill(in_flight_.begin(), in_flight_.end(), 0);
  busy_.clear();
  waited_s_ = 0;
}

void TransferTracker::wait(NodeId v) {
  const auto began = std::chrono::steady_clock::now();
  pager_.wait(v);
  waited_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  in_flight_[static_cast<std::size_t>(v)] = 0;
  std::erase_if(busy_, [v](const BusyRange& r) { return r.node == v; });
}

void TransferTracker::released(NodeId v, std::int64_t begin, std::int64_t end) {
  if (!in_flight_[static_cast<std::size_t>(v)]) return;
  // Full (a node freed again and again while its transfers queue): the oldest range's
  // transfer goes first, rather than the table growing during a step.
  if (busy_.size() == busy_.capacity()) {
    wait(busy_.front().node);
    if (!in_flight_[static_cast<std::size_t>(v)]) return;  // that was v's own
  }
  busy_.push_back({begin, end, v});
}

void TransferTracker::claim(std::int64_t begin, std::int64_t end) {
  for (;;) {
    const auto it =
        std::find_if(busy_.begin(), busy_.end(), [&](const BusyRange& r) { return r.begin < end && begin < r.end; });
    if (it == busy_.end()) return;
    wait(it->node);  // removes it
  }
}

}  // namespace poet::runtime::detail
