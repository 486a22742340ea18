#include "poet/util/interrupt.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

namespace poet {
namespace {

constexpr std::size_t kSlots = 64;
constexpr std::size_t kNoSlot = kSlots;
constexpr std::size_t kPathCapacity = 4096;
constexpr std::array<int, 4> kSignals = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

std::array<std::atomic<pid_t>, kSlots> g_children{};  // 0: free

// A file slot is written only between claiming it (kFilling) and publishing it (kReady);
// the handler reads only published slots.
enum FileSlotState : int { kFree, kFilling, kReady };
struct FileSlot {
  std::atomic<int> state{kFree};
  char path[kPathCapacity];
  dev_t device;
  ino_t inode;
};
std::array<FileSlot, kSlots> g_files;

// Two buffers: the setter fills the one the handler does not read, then publishes it, so
// the handler (which may interrupt the setter) always reads a whole note.
struct Note {
  char text[1024];
  std::size_t size;
};
std::array<Note, 2> g_notes{};
std::atomic<int> g_note_published{-1};  // -1: none

// StopOnInterrupt's state: armed while one lives, until the first signal takes it.
std::atomic<bool> g_stop_armed{false};
std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_stop_signal{0};
Note g_stop_note{};

// The thread that installed the handler: the one that handles every signal. The kernel may
// deliver a process's signal to any thread that does not block it, such as a oneDNN or
// OpenMP worker in the middle of a kernel.
std::atomic<pid_t> g_handling_thread{0};

// DeferInterrupts' state: how many live, and the signal that waits for them (0: none).
std::atomic<int> g_defer_depth{0};
std::atomic<int> g_deferred_signal{0};

static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the handler reads these; they must not lock");

void write_note(const Note& n) { [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, n.text, n.size); }

// Fills `n` with `note` as a line of its own (on a terminal a progress bar may hold the
// current one).
void fill_note(Note& n, const std::string& note) {
  const std::string line = (::isatty(STDERR_FILENO) ? "\n" : "") + note;
  n.size = std::min(line.size(), sizeof n.text - 1);
  std::memcpy(n.text, line.data(), n.size);
  n.text[n.size++] = '\n';
}

pid_t this_thread() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// Only async-signal-safe calls: gettid, tgkill, kill, lstat, unlink, rmdir, write, _exit.
// Not instrumented by ASan, and it keeps no array on its stack: a signal may come while a
// oneDNN kernel runs with its stack pointer in memory oneDNN allocated, where ASan read the
// handler's locals (an initializer list) and its hook before _exit (which unpoisons the
// interrupted thread's stacks) as heap overflows (CI, three times).
__attribute__((no_sanitize("address"))) void on_interrupt(int signal_number) {
  // A signal taken by another thread is passed on to the handling one (which then runs
  // this), so that clean-up and exit never run on a worker's stack. If that thread has
  // gone, this one handles it.
  const pid_t handler = g_handling_thread.load();
  if (handler > 0 && handler != this_thread() && ::syscall(SYS_tgkill, ::getpid(), handler, signal_number) == 0) return;
  if (g_defer_depth.load() > 0) {
    int none = 0;
    if (g_deferred_signal.compare_exchange_strong(none, signal_number)) return;
  }
  // With its reader gone, output has nowhere to go: a stop's answer would be lost too.
  if (signal_number != SIGPIPE && g_stop_armed.exchange(false)) {
    g_stop_signal.store(signal_number);
    g_stop_requested.store(true);
    write_note(g_stop_note);
    return;
  }
  // One clean-up: a signal another thread takes meanwhile (a pager's, with its own mask)
  // waits for the first one's exit instead of printing the note again.
  static std::atomic<bool> ending{false};
  if (ending.exchange(true))
    for (;;) ::pause();
  for (auto& child : g_children)
    if (const pid_t group = child.load(); group > 0) {
      ::kill(-group, SIGKILL);
      ::kill(group, SIGKILL);  // in case it has not made its own group yet
    }
  // Files first, then folders, which rmdir removes only when empty (a report's folder,
  // once its lock file is gone).
  for (int pass = 0; pass < 2; ++pass)  // a plain count: no array on the handler's stack
    for (auto& file : g_files) {
      const bool folders = pass == 1;
      if (file.state.load() != kReady) continue;
      struct stat st {};
      if (::lstat(file.path, &st) != 0 || st.st_dev != file.device || st.st_ino != file.inode) continue;
      if (S_ISDIR(st.st_mode) != folders) continue;
      if (folders)
        ::rmdir(file.path);
      else
        ::unlink(file.path);
    }
  if (const int n = g_note_published.load(); n >= 0) write_note(g_notes[n]);
  ::_exit(128 + signal_number);
}

}  // namespace

void install_interrupt_handlers() {
  g_handling_thread.store(this_thread());
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  // A stop (StopOnInterrupt) returns from the handler: the calls it interrupted go on.
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  // One clean-up at a time: the other signals wait while the first one's handler runs.
  for (const int s : kSignals) sigaddset(&action.sa_mask, s);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  // A closed terminal, or a closed pipe to the output's reader (`poet plan ... | head`), too.
  // But what the caller ignores stays ignored: SIGHUP under `nohup poet ...`, and SIGPIPE
  // where a write to a closed pipe is to fail with EPIPE instead (then reported as such).
  for (const int s : {SIGHUP, SIGPIPE}) {
    struct sigaction before {};
    if (::sigaction(s, nullptr, &before) == 0 && before.sa_handler != SIG_IGN) ::sigaction(s, &action, nullptr);
  }
}

void kill_on_interrupt(pid_t group) {
  for (auto& child : g_children) {
    pid_t expected = 0;
    if (child.compare_exchange_strong(expected, group)) return;
  }
}

void forget_child_on_interrupt(pid_t group) {
  for (auto& child : g_children) {
    pid_t expected = group;
    if (child.compare_exchange_strong(expected, 0)) return;
  }
}

RemoveOnInterrupt::RemoveOnInterrupt(const std::string& path) : slot_(kNoSlot) {
  struct stat st {};
  if (path.size() >= kPathCapacity || ::lstat(path.c_str(), &st) != 0) return;
  for (std::size_t s = 0; s < kSlots; ++s) {
    int expected = kFree;
    if (!g_files[s].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_files[s].path, path.c_str(), path.size() + 1);
    g_files[s].device = st.st_dev;
    g_files[s].inode = st.st_ino;
    g_files[s].state.store(kReady);
    slot_ = s;
    return;
  }
}

RemoveOnInterrupt::~RemoveOnInterrupt() {
  if (slot_ != kNoSlot) g_files[slot_].state.store(kFree);
}

DeferInterrupts::DeferInterrupts() { g_defer_depth.fetch_add(1); }

DeferInterrupts::~DeferInterrupts() {
  if (g_defer_depth.fetch_sub(1) != 1) return;
  if (const int waiting = g_deferred_signal.exchange(0); waiting != 0) ::raise(waiting);
}

void set_interrupt_note(const std::string& note) {
  if (note.empty()) {
    g_note_published.store(-1);
    return;
  }
  const int spare = g_note_published.load() == 0 ? 1 : 0;
  fill_note(g_notes[spare], note);
  g_note_published.store(spare);
}

StopOnInterrupt::StopOnInterrupt(const std::string& note) {
  fill_note(g_stop_note, note);
  g_stop_signal.store(0);
  g_stop_requested.store(false);
  g_stop_armed.store(true);
}

StopOnInterrupt::~StopOnInterrupt() { g_stop_armed.store(false); }

const std::atomic<bool>& StopOnInterrupt::requested() const { return g_stop_requested; }

int StopOnInterrupt::signal_number() const { return g_stop_signal.load(); }

void reset_interrupt_state_in_child() {
  g_handling_thread.store(0);
  g_note_published.store(-1);
  g_stop_armed.store(false);
  for (const int s : kSignals) {
    struct sigaction now {};
    if (::sigaction(s, nullptr, &now) == 0 && now.sa_handler == on_interrupt) ::signal(s, SIG_DFL);
  }
  for (auto& child : g_children) child.store(0);
  for (auto& file : g_files) file.state.store(kFree);
}

}  // namespace poet
