// Work on threads whose failures come back (util/side_by_side.h), and the advice for the
// process limits a failure may hit (util/error.h).
#include "poet/util/side_by_side.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>

#include "poet/util/error.h"

namespace poet {
namespace {

TEST(SideBySide, EveryTaskRunsAndAFailureReachesTheCaller) {
  std::atomic<int> ran = 0;
  run_side_by_side(4, [&](std::size_t) { ++ran; });
  EXPECT_EQ(ran.load(), 4);

  ran = 0;
  try {
    run_side_by_side(3, [&](std::size_t i) {
      ++ran;
      if (i >= 1) throw IoError("task " + std::to_string(i) + " could not open a pipe");
    });
    FAIL() << "no exception";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(), "task 1 could not open a pipe");  // the lowest-numbered, whatever finished first
  }
  EXPECT_EQ(ran.load(), 3);  // the others ran to their end
}

TEST(SideBySide, ProcessLimitsAreNamedWithTheirShellCommand) {
  EXPECT_NE(process_limit_advice(EMFILE).find("files open (ulimit -n "), std::string::npos);
  EXPECT_NE(process_limit_advice(EAGAIN).find("(ulimit -u "), std::string::npos);
  EXPECT_EQ(process_limit_advice(ENOSPC), "");
}

}  // namespace
}  // namespace poet
