// Work in a forked child process that reports through a pipe: for what may crash, overrun
// its time or have to be ended (CBC's solve, a sweep's methods), so that none of it can
// take poet down or run on after it.
//
// A child dies with its parent: it runs in its own process group, asks the kernel for
// SIGKILL when its parent dies (PR_SET_PDEATHSIG; it exits at once if the parent already
// died in between), and its group is registered with the interrupt handler (interrupt.h),
// which kills it on SIGINT or SIGTERM. The death signal follows the parent *thread*: start
// children from a thread that outlives them (poet starts them from the main thread).
#pragma once

#include <sys/types.h>

#include <functional>
#include <span>
#include <string>

namespace poet {

class ChildProcess {
 public:
  // Forks. The child runs `body` with the write end of the report pipe and ends with the
  // code it returns (an escaping exception: `what` and its message on stderr, exit 2); it
  // never returns into the caller's code. Throws IoError naming `what` if the pipe or the
  // fork fails.
  ChildProcess(const std::string& what, const std::function<int(int report_fd)>& body);
  // Kills the child if it still runs, and reaps it.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // What the child has written so far (collect_reports reads it).
  const std::string& report() const { return report_; }
  // Whether the pipe closed: the child finished (or died).
  bool done() const { return fd_ < 0; }
  // Ends the child's process group at once (SIGKILL).
  void kill();
  // Waits for the child to end; its waitpid status (the same on every call).
  int wait();

  // Waits up to `timeout_ms` until one of `children` that is not done has written or
  // ended, then reads what each has written into its report. A signal counts as a timeout.
  static void collect_reports(std::span<ChildProcess* const> children, int timeout_ms);

 private:
  void read_available();

  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string report_;
};

// A wait status in words: "exit status 2", "signal 9".
std::string describe_wait_status(int status);

}  // namespace poet
