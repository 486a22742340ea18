// A status line on stderr for work that runs up to a time limit with no count to show (a
// solve): "LABEL [#####.....] 18 s of at most 60 s: DETAIL". On a terminal a thread redraws
// it in place four times a second. Otherwise it is a plain line at each tenth of the limit
// from the fifth second on, so that logs show a long run's progress and quick runs print
// nothing. Lines printed meanwhile go through print_above_status(), so that the two do not
// tear.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace poet {

class StatusLine {
 public:
  StatusLine(std::string label, double limit_s);
  ~StatusLine();  // stops the redrawing and clears the line
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  // What the work is doing now; shown from the next redraw on.
  void set(std::string detail);

 private:
  friend void print_above_status(const std::string& line);
  void run();
  void draw_locked(double elapsed_s);

  std::string label_, detail_;
  double limit_s_;
  bool terminal_, drawn_ = false, stop_ = false;
  int tenths_logged_ = 0;
  std::chrono::steady_clock::time_point began_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
};

// Prints `line` (and a newline) on stderr above the active status line, if this process
// has one; a forked child, whose parent's line may be on the terminal, clears it first.
void print_above_status(const std::string& line);

}  // namespace poet
