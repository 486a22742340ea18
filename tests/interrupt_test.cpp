// Ctrl-C asked of long work that keeps what it has (StopOnInterrupt, as `poet solve` does):
// the first signal asks for a stop, the next ends the process as every other interrupt.
// And a step that waits for its note before a signal acts (DeferInterrupts).
#include "poet/util/interrupt.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

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

// `poet plan ... | head`: a write to a pipe whose reader has gone ends the process with
// its clean-up (a page file, a temporary), even while a stop is armed: the answer a stop
// keeps would have no reader either.
TEST(StopOnInterrupt, AGoneReaderEndsTheProcessWithItsCleanUp) {
  char path[] = "/tmp/poet_interrupt_test_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const int status = status_of_child_with_handlers([&path] {
    const RemoveOnInterrupt scratch(path);
    const StopOnInterrupt stop("unused");
    int ends[2];
    if (::pipe(ends) != 0) ::_exit(2);
    ::close(ends[0]);
    [[maybe_unused]] const ssize_t written = ::write(ends[1], "x", 1);
    ::_exit(3);  // the write should not return
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;  // by the handler, not killed by the signal
  EXPECT_EQ(WEXITSTATUS(status), 141);
  EXPECT_NE(::access(path, F_OK), 0) << "the registered file was left behind";
  ::unlink(path);
}

TEST(StopOnInterrupt, AnIgnoredBrokenPipeStaysIgnored) {  // the write fails with EPIPE instead
  const int status = status_of_child_with_handlers([] {
    ::signal(SIGPIPE, SIG_IGN);
    install_interrupt_handlers();
    int ends[2];
    if (::pipe(ends) != 0) ::_exit(2);
    ::close(ends[0]);
    ::_exit(::write(ends[1], "x", 1) < 0 && errno == EPIPE ? 0 : 4);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// What a child with the handlers wrote to stderr, with its wait status.
std::pair<int, std::string> status_and_stderr_of_child_with_handlers(const std::function<void()>& body) {
  char path[] = "/tmp/poet_interrupt_note_XXXXXX";
  const int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  const int status = status_of_child_with_handlers([&] {
    ::dup2(fd, STDERR_FILENO);
    body();
  });
  ::close(fd);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path);
  return {status, text.str()};
}

// A file renamed into place and the note that counts what it holds go together: a signal
// between the two waits for the note (the sweep's progress, the training checkpoint).
TEST(DeferInterrupts, ASignalWaitsForTheStepAndItsNote) {
  const auto [status, note] = status_and_stderr_of_child_with_handlers([] {
    set_interrupt_note("2 tasks saved");
    {
      const DeferInterrupts together;
      ::raise(SIGTERM);  // returns: the step goes on
      set_interrupt_note("3 tasks saved");
    }
    ::_exit(3);  // the signal should have ended the process
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 143);
  EXPECT_EQ(note, "3 tasks saved\n");
}

// A step that hangs can still be interrupted: the second signal does not wait.
TEST(DeferInterrupts, TheSecondSignalEndsTheProcessAtOnce) {
  const auto [status, note] = status_and_stderr_of_child_with_handlers([] {
    set_interrupt_note("2 tasks saved");
    const DeferInterrupts together;
    ::raise(SIGTERM);
    ::raise(SIGINT);
    ::_exit(3);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_EQ(note, "2 tasks saved\n");
}

// The kernel may hand a signal to any thread (a oneDNN worker mid-kernel): that thread
// passes it on and goes on; the thread that installed the handlers cleans up and exits.
TEST(InterruptHandler, ASignalAWorkerTakesIsHandledByTheInstallingThread) {
  const auto [status, note] = status_and_stderr_of_child_with_handlers([] {
    sigset_t interrupt;
    sigemptyset(&interrupt);
    sigaddset(&interrupt, SIGINT);
    ::pthread_sigmask(SIG_BLOCK, &interrupt, nullptr);  // held here until the worker is done
    std::atomic<bool> worker_went_on{false};
    std::thread worker([&] {
      ::pthread_sigmask(SIG_UNBLOCK, &interrupt, nullptr);
      ::pthread_kill(::pthread_self(), SIGINT);  // taken by this thread, at once
      worker_went_on.store(true);
    });
    worker.join();
    if (worker_went_on.load()) {
      [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, "worker went on\n", 15);
    }
    ::pthread_sigmask(SIG_UNBLOCK, &interrupt, nullptr);  // the passed-on signal ends the process here
    ::_exit(3);
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_EQ(note, "worker went on\n");
}

}  // namespace
}  // namespace poet
