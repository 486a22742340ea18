// A one-line progress bar on stderr for long loops: redrawn in place on a terminal (at
// most ten times a second), and a plain line every tenth of the way when stderr is a file
// or pipe, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace poet {

class ProgressBar {
 public:
  // `unit` names what is counted ("batch", "task").
  explicit ProgressBar(std::string label, std::string unit = "batch");
  ~ProgressBar() { finish(); }  // an error's message then starts a line of its own
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  // `done` of `total` units finished; `detail` is shown after the counts (e.g. the loss).
  void update(std::int64_t done, std::int64_t total, const std::string& detail);
  // Ends the line on a terminal.
  void finish();

 private:
  std::string label_, unit_;
  bool terminal_;
  std::chrono::steady_clock::time_point began_, last_draw_;
  std::int64_t last_tenth_ = 0;
  bool drawn_ = false;
};

}  // namespace poet
