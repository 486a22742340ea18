#include "poet/util/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "poet/util/units.h"

namespace poet {

ProgressBar::ProgressBar(std::string label, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      terminal_(isatty(fileno(stderr)) != 0),
      began_(std::chrono::steady_clock::now()),
      last_draw_(began_) {}

void ProgressBar::update(std::int64_t done, std::int64_t total, const std::string& detail) {
  const auto now = std::chrono::steady_clock::now();
  const std::int64_t tenth = total > 0 ? done * 10 / total : 10;
  const bool last = done >= total;
  if (terminal_ ? (!last && now - last_draw_ < std::chrono::milliseconds(100)) : (tenth == last_tenth_ && !last))
    return;
  if (!terminal_ && last && tenth == last_tenth_ && drawn_) return;
  last_draw_ = now;
  last_tenth_ = tenth;
  const double elapsed = std::chrono::duration<double>(now - began_).count();
  const double eta = done > 0 ? elapsed * static_cast<double>(total - done) / static_cast<double>(done) : 0;
  constexpr int kWidth = 30;
  const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
  const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
  const std::string line = fmt::format("{} [{}] {} {}/{}  {}  elapsed {}  ETA {}", label_, bar, unit_, done, total, detail,
                                       format_seconds(elapsed), format_seconds(eta));
  if (terminal_)
    fmt::print(stderr, "\r{}\033[K", line);
  else
    fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (terminal_ && drawn_) fmt::print(stderr, "\n");
  drawn_ = false;
}

}  // namespace poet
