// How long storage was busy: the union of the spans during which at least one transfer was
// moving bytes. Transfers side by side count once, so it compares with the simulator's
// bus, which moves one transfer at a time (SimulationResult::transfer_time_s).
#pragma once

#include <chrono>
#include <cstddef>

namespace poet::paging {

class BusyTime {
 public:
  using Clock = std::chrono::steady_clock;

  void began(Clock::time_point now) {
    if (moving_++ == 0) since_ = now;
  }
  void ended(Clock::time_point now) {
    if (--moving_ == 0) busy_ += now - since_;
  }
  // The spans ended so far; one still open counts once it ends.
  double seconds() const { return std::chrono::duration<double>(busy_).count(); }

 private:
  std::size_t moving_ = 0;
  Clock::time_point since_;
  Clock::duration busy_{};
};

}  // namespace poet::paging
