// The memory a run may hold (util/memory_limit.h), read from control-group files laid out
// as the kernel lays them out, under a scratch folder standing for "/".
#include "poet/util/memory_limit.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "scratch_folder.h"

namespace poet {
namespace {

class MemoryLimitTest : public ScratchFolderTest {
 protected:
  void write(const std::string& relative, const std::string& text) const {
    const std::filesystem::path file = dir_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
};

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

// cgroup v2 (one hierarchy, "0::PATH"): the lowest memory.max of the group and its
// ancestors; "max" is no cap.
TEST_F(MemoryLimitTest, TheLowestCapOfTheGroupAndItsAncestorsHolds) {
  write("proc/self/cgroup", "0::/user.slice/run.scope\n");
  write("sys/fs/cgroup/user.slice/memory.max", "314572800\n");
  write("sys/fs/cgroup/user.slice/run.scope/memory.max", "max\n");
  const auto limit = memory_limit(dir_);
  ASSERT_TRUE(limit.has_value());
  EXPECT_EQ(limit->bytes, 300 * kMiB);
  EXPECT_EQ(limit->what, "the memory limit of this control group (/sys/fs/cgroup/user.slice/memory.max: 300 MiB)");
}

// cgroup v1, as Docker mounts it: the container's own group at the mount's top, while
// /proc/self/cgroup names the host's path; v1 writes 2^63 rounded down to a page for no cap.
TEST_F(MemoryLimitTest, AContainersOwnGroupAtTheMountsTopIsFound) {
  write("proc/self/cgroup", "12:pids:/docker/ab12\n4:cpu,memory:/docker/ab12\n0::/\n");
  write("sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n");
  EXPECT_EQ(memory_limit(dir_)->bytes, 2048 * kMiB);

  write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_FALSE(memory_limit(dir_).has_value());
}

// Files a kernel would not write are passed over, not trusted.
TEST_F(MemoryLimitTest, UnreadableFiguresAreNoCap) {
  write("proc/self/cgroup", "0::/../../etc\nnot a line\n0::/a\n");
  write("sys/fs/cgroup/a/memory.max", "12abc\n");
  EXPECT_FALSE(memory_limit(dir_).has_value());
  std::filesystem::remove(dir_ / "proc/self/cgroup");
  EXPECT_FALSE(memory_limit(dir_).has_value());
}

TEST_F(MemoryLimitTest, AnAllocationPastTheLimitIsRefusedBeforeItIsMade) {
  const auto limit = memory_limit();
  ASSERT_TRUE(limit.has_value());
  EXPECT_GT(limit->bytes, resident_bytes());
  EXPECT_GT(resident_bytes(), 0u);
  EXPECT_EQ(error_of([] { check_memory_for(1 << 20, "a megabyte", "ask for less"); }), "no error");
  const std::string refused = error_of([&] { check_memory_for(limit->bytes, "the arena", "ask for less"); });
  EXPECT_TRUE(refused.starts_with("the arena needs ")) << refused;
  EXPECT_NE(refused.find(", more than " + limit->what + "; ask for less"), std::string::npos) << refused;
}

}  // namespace
}  // namespace poet
