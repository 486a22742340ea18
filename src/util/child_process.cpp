#include "poet/util/child_process.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "poet/util/error.h"
#include "poet/util/interrupt.h"

namespace poet {

ChildProcess::ChildProcess(const std::string& what, const std::function<int(int report_fd)>& body) {
  int fds[2];
  if (::pipe(fds) != 0) {
    const int err = errno;
    throw IoError(fmt::format("cannot start {}: pipe: {}{}", what, std::strerror(err), process_limit_advice(err)));
  }
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw IoError(fmt::format("cannot start {}: fork: {}{}", what, std::strerror(err), process_limit_advice(err)));
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent died before the request took effect
    reset_interrupt_state_in_child();
    ::close(fds[0]);
    int code = 2;
    try {
      code = body(fds[1]);
    } catch (const std::exception& e) {
      // Never unwind into the parent's code from the child.
      fmt::print(stderr, "{} failed: {}\n", what, e.what());
    } catch (...) {
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  fd_ = fds[0];
  // Both sides set the group, so it exists before the handler may need it.
  ::setpgid(pid_, pid_);
  kill_on_interrupt(pid_);
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    kill();
    wait();
  }
  if (fd_ >= 0) ::close(fd_);
}

void ChildProcess::kill() {
  if (reaped_) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
}

int ChildProcess::wait() {
  if (reaped_) return status_;
  while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  forget_child_on_interrupt(pid_);
  return status_;
}

void ChildProcess::read_available() {
  char buffer[1 << 16];
  const ssize_t n = ::read(fd_, buffer, sizeof buffer);
  if (n < 0 && errno == EINTR) return;
  if (n > 0) {
    report_.append(buffer, static_cast<std::size_t>(n));
    return;
  }
  ::close(fd_);
  fd_ = -1;
}

void ChildProcess::collect_reports(std::span<ChildProcess* const> children, int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<ChildProcess*> open;
  for (ChildProcess* c : children)
    if (!c->done()) {
      fds.push_back({c->fd_, POLLIN, 0});
      open.push_back(c);
    }
  if (fds.empty() || ::poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  for (std::size_t k = 0; k < fds.size(); ++k)
    if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) open[k]->read_available();
}

std::string describe_wait_status(int status) {
  return WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                             : fmt::format("exit status {}", WEXITSTATUS(status));
}

}  // namespace poet
