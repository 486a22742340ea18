// Ctrl-C asked of long work that keeps what it has (StopOnInterrupt, as `poet solve` does):
// the first signal asks for a stop, the next ends the process as every other interrupt.
#include "poet/util/interrupt.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace poet {
namespace {

// Runs `body` in a forked child with poet's interrupt handlers installed; its wait status.
int status_of_child_with_handlers(const std::function<void()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    install_interrupt_handlers();
    body();
    ::_exit(99);  // the body should not get here
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return status;
}

TEST(StopOnInterrupt, TheFirstSignalAsksForAStopAndTheNextEndsTheProcess) {
  const int status = status_of_child_with_handlers([] {
    const StopOnInterrupt stop("(a stop was asked: expected in this test)");
    if (stop.requested() || stop.signal_number() != 0) ::_exit(2);
    ::raise(SIGTERM);  // returns: the work goes on to wind up
    if (!stop.requested() || stop.signal_number() != SIGTERM) ::_exit(3);
    ::raise(SIGINT);  // ends the process
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 130);
}

TEST(StopOnInterrupt, OnceDestroyedTheFirstSignalEndsTheProcess) {
  const int status = status_of_child_with_handlers([] {
    { const StopOnInterrupt stop("unused"); }
    ::raise(SIGTERM);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 143);
}

TEST(StopOnInterrupt, AClosedTerminalEndsTheProcessWithItsCleanUp) {
  const int status = status_of_child_with_handlers([] { ::raise(SIGHUP); });
  ASSERT_TRUE(WIFEXITED(status)) << status;  // by the handler, not killed by the signal
  EXPECT_EQ(WEXITSTATUS(status), 129);
}

TEST(StopOnInterrupt, AnIgnoredHangupStaysIgnored) {  // nohup
  const int status = status_of_child_with_handlers([] {
    ::signal(SIGHUP, SIG_IGN);
    install_interrupt_handlers();
    ::raise(SIGHUP);
    ::_exit(0);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace poet
