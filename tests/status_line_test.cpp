// The status line of long solves: off a terminal, a quick run prints nothing of it, and
// the lines printed above it come out whole.
#include <gtest/gtest.h>

#include "poet/util/status_line.h"

namespace poet {
namespace {

TEST(StatusLine, OffATerminalAQuickRunShowsOnlyTheLinesAboveIt) {
  ::testing::internal::CaptureStderr();
  {
    StatusLine status("  solve", 1000);  // its first line would come at a tenth: 100 s
    status.set("window search");
    print_above_status("  search: stages [0, 8): 2 -> 1");
  }
  print_above_status("after");  // no status line: printed as is
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "  search: stages [0, 8): 2 -> 1\nafter\n");
}

}  // namespace
}  // namespace poet
