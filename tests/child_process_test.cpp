// Children die with their parent: an interrupted or killed poet leaves no process behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

#include "poet/util/child_process.h"
#include "poet/util/interrupt.h"
#include "poet/util/write_all.h"

namespace poet {
namespace {

// Blocks until `fd` has `size` bytes or closes; false if it closed first.
bool read_exactly(int fd, void* into, std::size_t size) {
  auto* p = static_cast<char*>(into);
  while (size > 0) {
    const ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// A solve-like child: reports its pid, then works "forever" (pause, as CBC's root LP may).
int report_pid_and_hang(int report_fd) {
  const pid_t me = ::getpid();
  write_all(report_fd, &me, sizeof me);
  for (;;) ::pause();
}

// The test process adopts orphans while this lives (PR_SET_CHILD_SUBREAPER), so it can
// reap, and so see how, the children of a parent it ended.
class AdoptOrphans {
 public:
  AdoptOrphans() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~AdoptOrphans() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
};

// Forks a poet-like parent that installs the interrupt handlers and starts `depth` nested
// hanging children (1: a solve's CBC; 2: a sweep worker and its CBC). Returns the parent's
// pid; `descendants` gets the children's pids, outermost first, once all are running.
pid_t start_parent(int depth, std::vector<pid_t>& descendants) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const pid_t parent = ::fork();
  if (parent == 0) {
    ::close(fds[0]);
    install_interrupt_handlers();
    if (depth == 1) {
      ChildProcess child("a hanging child", report_pid_and_hang);
      while (child.report().size() < sizeof(pid_t)) {
        ChildProcess* const children[] = {&child};
        ChildProcess::collect_reports(children, 1000);
      }
      write_all(fds[1], child.report().data(), sizeof(pid_t));
      for (;;) ::pause();  // with the child's handle alive (its destructor would end the child)
    } else {
      ChildProcess worker("a sweep-like worker", [](int report_fd) {
        const pid_t me = ::getpid();
        write_all(report_fd, &me, sizeof me);
        ChildProcess solver("a hanging solver", report_pid_and_hang);
        while (solver.report().size() < sizeof(pid_t)) {
          ChildProcess* const children[] = {&solver};
          ChildProcess::collect_reports(children, 1000);
        }
        write_all(report_fd, solver.report().data(), sizeof(pid_t));
        for (;;) ::pause();
        return 0;
      });
      while (worker.report().size() < 2 * sizeof(pid_t)) {
        ChildProcess* const children[] = {&worker};
        ChildProcess::collect_reports(children, 1000);
      }
      write_all(fds[1], worker.report().data(), 2 * sizeof(pid_t));
      for (;;) ::pause();
    }
  }
  ::close(fds[1]);
  descendants.assign(static_cast<std::size_t>(depth), 0);
  EXPECT_TRUE(read_exactly(fds[0], descendants.data(), descendants.size() * sizeof(pid_t)));
  ::close(fds[0]);
  return parent;
}

// Reaps `pid` (a child or an adopted orphan); its wait status.
int reap(pid_t pid) {
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, 0) == pid) return status;
    if (errno != EINTR) {
      ADD_FAILURE() << "cannot reap " << pid << ": " << std::strerror(errno);
      return 0;
    }
  }
}

void expect_killed(pid_t pid) {
  const int status = reap(pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "pid " << pid << ": " << describe_wait_status(status);
  EXPECT_NE(::kill(pid, 0), 0) << "pid " << pid << " still exists";
}

TEST(ChildProcess, ReportsWhatTheChildWroteAndHowItEnded) {
  ChildProcess child("a test child", [](int fd) {
    write_all(fd, "hello", 5);
    return 7;
  });
  while (!child.done()) {
    ChildProcess* const children[] = {&child};
    ChildProcess::collect_reports(children, 1000);
  }
  EXPECT_EQ(child.report(), "hello");
  const int status = child.wait();
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(describe_wait_status(status), "exit status 7");
}

TEST(ChildProcess, AnExceptionInTheChildEndsItWithExitTwo) {
  ChildProcess child("a failing child", [](int) -> int { throw std::runtime_error("boom"); });
  EXPECT_EQ(describe_wait_status(child.wait()), "exit status 2");
}

TEST(ChildProcess, DestroyingAHandleKillsAndReapsTheChild) {
  pid_t pid = 0;
  {
    ChildProcess child("a hanging child", report_pid_and_hang);
    pid = child.pid();
  }
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1) << "already reaped";
  EXPECT_NE(::kill(pid, 0), 0);
}

// Sends `signal` to a poet-like parent with `depth` nested children: the parent exits with
// `code`, and every descendant is killed.
void expect_signal_ends_all(int signal, int depth, int code) {
  AdoptOrphans adopt;
  std::vector<pid_t> descendants;
  const pid_t parent = start_parent(depth, descendants);
  ASSERT_EQ(::kill(parent, signal), 0);
  const int status = reap(parent);
  if (signal == SIGKILL) {
    EXPECT_TRUE(WIFSIGNALED(status)) << describe_wait_status(status);
  } else {
    ASSERT_TRUE(WIFEXITED(status)) << describe_wait_status(status);
    EXPECT_EQ(WEXITSTATUS(status), code);
  }
  for (const pid_t pid : descendants) expect_killed(pid);
}

TEST(ChildProcess, SigintEndsTheParentWith130AndKillsItsChild) { expect_signal_ends_all(SIGINT, 1, 130); }

TEST(ChildProcess, SigtermEndsTheParentWith143AndKillsASweepWorkerAndItsSolver) {
  expect_signal_ends_all(SIGTERM, 2, 143);
}

TEST(ChildProcess, AParentKilledOutrightTakesItsChildrenWithIt) {
  // SIGKILL runs no handler: the children's death signal (PR_SET_PDEATHSIG) ends them.
  expect_signal_ends_all(SIGKILL, 2, 0);
}

}  // namespace
}  // namespace poet
