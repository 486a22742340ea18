// What an interrupted poet (Ctrl-C: SIGINT, SIGTERM, SIGHUP when its terminal closes, or
// SIGPIPE when the reader of its output has gone, as in `poet plan ... | head`) must not
// leave behind: child processes, and files it was writing or uses for scratch (an atomic
// write's temporary, a page file). The handler kills every registered child's process
// group, removes every registered file that is still the one registered, and ends the
// process at once with 128 + the signal: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP,
// 141 for SIGPIPE, the code a shell gives a command that signal ended (so scripts can tell
// an interrupt from a timeout).
//
// The registries are fixed arrays of atomics (a handler may not allocate or lock); a
// registration that finds them full is skipped, and the child then still dies with its
// parent (PR_SET_PDEATHSIG, see child_process.h).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <string>

namespace poet {

// Installs the handler for SIGINT, SIGTERM, SIGHUP and SIGPIPE (the last two unless they
// are ignored, as SIGHUP is under nohup). The command line does this first thing; a
// library user that wants the clean-up calls it too (nothing else is changed).
void install_interrupt_handlers();

// Registers the process group of a child for killing on interrupt, until forgotten.
void kill_on_interrupt(pid_t group);
void forget_child_on_interrupt(pid_t group);

// Removes `path` on interrupt while this object lives, if `path` still names the file it
// named at construction (same device and inode: someone may have replaced it). A folder
// is removed only if it is empty once the files are: never anything the run did not make.
// Paths of up to 4,095 bytes; a longer one is not registered.
class RemoveOnInterrupt {
 public:
  explicit RemoveOnInterrupt(const std::string& path);
  ~RemoveOnInterrupt();
  RemoveOnInterrupt(const RemoveOnInterrupt&) = delete;
  RemoveOnInterrupt& operator=(const RemoveOnInterrupt&) = delete;

 private:
  std::size_t slot_;
};

// A line for the handler to print to stderr before it exits, saying what the interrupt
// leaves (e.g. which epoch a checkpoint holds). Replaces the previous note; an empty one
// prints nothing. Up to 1,023 bytes (longer is cut). Set from one thread at a time.
void set_interrupt_note(const std::string& note);

// While one lives, a signal waits until the last one ends, then acts as it would have:
// for a step and the note that says what it did, such as a file renamed into place and
// the note counting what the file holds, so an interrupt never finds one done without
// the other. Only the first signal waits; a second ends the process at once (with the
// note as it stands), so a step that hangs can still be interrupted. Any thread may hold
// one; keep the step short.
class DeferInterrupts {
 public:
  DeferInterrupts();
  ~DeferInterrupts();
  DeferInterrupts(const DeferInterrupts&) = delete;
  DeferInterrupts& operator=(const DeferInterrupts&) = delete;
};

// While one lives, the first of these signals but SIGPIPE does not end the process: it
// prints `note` and sets `requested()`, which the work polls to wind up and keep what it
// has (a solve then answers with its best schedule so far). The next signal ends the
// process as above, with its clean-up; so does SIGPIPE, since the answer has no reader.
// One at a time.
class StopOnInterrupt {
 public:
  explicit StopOnInterrupt(const std::string& note);
  ~StopOnInterrupt();
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;

  const std::atomic<bool>& requested() const;
  // The signal that asked for the stop, 0 if none did.
  int signal_number() const;
};

// In a freshly forked child: the default actions for these signals and nothing
// registered, so a child never removes its parent's files or kills its siblings.
void reset_interrupt_state_in_child();

}  // namespace poet
