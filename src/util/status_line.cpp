#include "poet/util/status_line.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

namespace poet {
namespace {

// The process's status line and the process that made it: a forked child inherits the
// pointer but not the thread, and must not wait on a mutex the thread may have held.
std::atomic<StatusLine*> g_active{nullptr};
std::atomic<pid_t> g_owner{0};

constexpr auto kRedraw = std::chrono::milliseconds(250);
constexpr double kQuietSeconds = 5;  // off a terminal, nothing before this
constexpr const char* kClearLine = "\r\033[K";

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) != 0; }

// A line wider than the terminal wraps, and "\r" then redraws only its last row.
std::size_t terminal_columns() {
  winsize size{};
  return ::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 ? size.ws_col : 80;
}

}  // namespace

StatusLine::StatusLine(std::string label, double limit_s)
    : label_(std::move(label)),
      limit_s_(std::max(limit_s, 1e-3)),
      terminal_(stderr_is_terminal()),
      began_(std::chrono::steady_clock::now()) {
  g_owner.store(::getpid());
  g_active.store(this);
  thread_ = std::thread([this] { run(); });
}

StatusLine::~StatusLine() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    if (terminal_ && drawn_) fmt::print(stderr, "{}", kClearLine);
    std::fflush(stderr);
  }
  wake_.notify_all();
  thread_.join();
  g_active.store(nullptr);
}

void StatusLine::set(std::string detail) {
  std::lock_guard lock(mutex_);
  detail_ = std::move(detail);
}

void StatusLine::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, kRedraw);
    if (stop_) break;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
    if (terminal_) {
      draw_locked(elapsed);
    } else if (const int tenth = static_cast<int>(10 * elapsed / limit_s_);
               elapsed >= kQuietSeconds && tenth > tenths_logged_ && tenth < 10) {
      tenths_logged_ = tenth;
      draw_locked(elapsed);
    }
  }
}

void StatusLine::draw_locked(double elapsed_s) {
  constexpr int kWidth = 30;
  const int filled = std::clamp(static_cast<int>(kWidth * elapsed_s / limit_s_), 0, kWidth);
  std::string line = fmt::format("{} [{}{}] {:.0f} s of at most {:.0f} s: {}", label_, std::string(filled, '#'),
                                 std::string(kWidth - filled, '.'), elapsed_s, limit_s_, detail_);
  if (terminal_) {
    if (const std::size_t width = terminal_columns() - 1; line.size() > width) line.resize(width);
    fmt::print(stderr, "{}{}", kClearLine, line);
  } else {
    fmt::print(stderr, "{}\n", line);
  }
  std::fflush(stderr);
  drawn_ = true;
}

void print_above_status(const std::string& line) {
  StatusLine* active = g_active.load();
  if (active != nullptr && g_owner.load() == ::getpid()) {
    std::lock_guard lock(active->mutex_);
    fmt::print(stderr, "{}{}\n", active->terminal_ && active->drawn_ ? kClearLine : "", line);
    std::fflush(stderr);
    return;  // the next redraw puts the status line back under it
  }
  fmt::print(stderr, "{}{}\n", active != nullptr && stderr_is_terminal() ? kClearLine : "", line);
  std::fflush(stderr);
}

}  // namespace poet
