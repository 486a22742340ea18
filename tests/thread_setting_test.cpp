#include "poet/kernels/thread_setting.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "poet/util/error.h"

namespace poet::kernels {
namespace {

// Sets OMP_NUM_THREADS for one check, and puts the test's own value back.
std::string verdict(const char* value) {
  const char* before = std::getenv("OMP_NUM_THREADS");
  const std::optional<std::string> kept = before ? std::optional<std::string>(before) : std::nullopt;
  if (value) ::setenv("OMP_NUM_THREADS", value, 1);
  else ::unsetenv("OMP_NUM_THREADS");
  std::string out = "accepted";
  try {
    check_thread_setting();
  } catch (const InputError& e) {
    out = e.what();
  }
  if (kept) ::setenv("OMP_NUM_THREADS", kept->c_str(), 1);
  else ::unsetenv("OMP_NUM_THREADS");
  return out;
}

TEST(ThreadSetting, WhatOpenMPReadsIsAccepted) {
  EXPECT_EQ(verdict(nullptr), "accepted");
  EXPECT_EQ(verdict(""), "accepted");
  EXPECT_EQ(verdict("1"), "accepted");
  EXPECT_EQ(verdict(" 2 "), "accepted");
  EXPECT_EQ(verdict("2,1"), "accepted");  // nested levels
}

TEST(ThreadSetting, WhatOpenMPWouldIgnoreIsNamed) {
  for (const char* value : {"abc", "0", "-3", "2.5", "1O", "2,", ",2", "2,x"})
    EXPECT_NE(verdict(value).find(std::string("OMP_NUM_THREADS is '") + value + "', not a number of threads; set it "
                                  "to a whole number from 1"),
              std::string::npos)
        << value;
}

TEST(ThreadSetting, MoreThreadsThanTheMachineCanStartAreRefused) {
  const unsigned cores = std::thread::hardware_concurrency();
  ASSERT_GT(cores, 0u);
  const std::string most = std::to_string(kMaxThreadsPerCore * cores);
  const std::string one_more = std::to_string(kMaxThreadsPerCore * cores + 1);
  EXPECT_EQ(verdict(most.c_str()), "accepted");
  const std::string refusal = verdict(one_more.c_str());
  EXPECT_NE(refusal.find("OMP_NUM_THREADS is '" + one_more + "', and poet runs at most " + most + " compute threads"),
            std::string::npos)
      << refusal;
  EXPECT_NE(refusal.find("set it to " + std::to_string(cores) + " or fewer"), std::string::npos) << refusal;
  // 100,000 crashed libgomp on a 2-core machine; a number past long's range is refused the same way.
  EXPECT_NE(verdict("100000").find("and poet runs at most"), std::string::npos);
  EXPECT_NE(verdict("99999999999999999999999").find("and poet runs at most"), std::string::npos);
  EXPECT_NE(verdict(("2," + one_more).c_str()).find("and poet runs at most"), std::string::npos);
}

}  // namespace
}  // namespace poet::kernels
