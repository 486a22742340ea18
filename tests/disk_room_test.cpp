// The room check a training run makes before its first step (util/disk_room.h).
#include "poet/util/disk_room.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <fstream>
#include <string>
#include <vector>

#include "poet/util/error.h"
#include "scratch_folder.h"

namespace poet {
namespace {

class DiskRoom : public ScratchFolderTest {
 protected:
  std::uint64_t free_bytes() const {
    struct statvfs fs {};
    EXPECT_EQ(::statvfs(dir_.c_str(), &fs), 0);
    return static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  }
  static std::string io_error_of(std::span<const PlannedWrite> writes) {
    try {
      check_room_for(writes);
    } catch (const IoError& e) {
      return e.what();
    }
    return "no error";
  }
};

TEST_F(DiskRoom, AWriteBeyondTheFreeSpaceIsRefusedByOptionPathAndFix) {
  const std::string checkpoint = (dir_ / "c.ckpt").string();  // a new file: its folder's file system counts
  const std::vector<PlannedWrite> small{{checkpoint, 4096, "--checkpoint"}};
  EXPECT_EQ(io_error_of(small), "no error");
  const std::vector<PlannedWrite> huge{{checkpoint, std::uint64_t{1} << 60, "--checkpoint"}};
  const std::string message = io_error_of(huge);
  EXPECT_NE(message.find("--checkpoint '" + checkpoint + "' needs up to "), std::string::npos) << message;
  EXPECT_NE(message.find("free; free space there or choose a --checkpoint on a disk with room"), std::string::npos)
      << message;
}

// Each fits alone; together, on one file system, they do not. (Other writers on this disk
// would have to free or fill a fifth of it between the two reads to change the verdict.)
TEST_F(DiskRoom, WritesOnOneFileSystemAreCountedTogether) {
  const std::uint64_t each = free_bytes() / 5 * 3;
  ASSERT_GT(each, 0u);
  std::ofstream(dir_ / "pages") << "an existing file counts where it is";
  const std::vector<PlannedWrite> pages{{(dir_ / "pages").string(), each, "--page-file"}};
  const std::vector<PlannedWrite> checkpoint{{(dir_ / "c.ckpt").string(), each, "--checkpoint"}};
  EXPECT_EQ(io_error_of(pages), "no error");
  EXPECT_EQ(io_error_of(checkpoint), "no error");
  const std::vector<PlannedWrite> both{pages[0], checkpoint[0]};
  const std::string message = io_error_of(both);
  EXPECT_NE(message.find("--page-file '" + pages[0].path + "'"), std::string::npos) << message;
  EXPECT_NE(message.find(" and --checkpoint '" + checkpoint[0].path + "'"), std::string::npos) << message;
  EXPECT_NE(message.find("in all on one file system"), std::string::npos) << message;
}

// A checkpoint saved again is written beside the last: the first epoch's save fits where
// the second's does not.
TEST_F(DiskRoom, AFileReplacedByACopyBesideItNeedsRoomForBoth) {
  const std::uint64_t each = free_bytes() / 5 * 3;
  ASSERT_GT(each, 0u);
  const std::string checkpoint = (dir_ / "c.ckpt").string();
  EXPECT_EQ(io_error_of(std::vector<PlannedWrite>{{checkpoint, each, "--checkpoint"}}), "no error");
  const std::string message = io_error_of(std::vector<PlannedWrite>{{checkpoint, each, "--checkpoint", 2}});
  EXPECT_NE(message.find("--checkpoint '" + checkpoint + "' needs up to "), std::string::npos) << message;
  EXPECT_NE(message.find(" (2 copies of "), std::string::npos) << message;
}

TEST_F(DiskRoom, APathWhoseFileSystemCannotBeToldIsLeftToItsWrites) {
  const std::vector<PlannedWrite> nowhere{{"/no/such/folder/c.ckpt", std::uint64_t{1} << 60, "--checkpoint"}};
  EXPECT_EQ(io_error_of(nowhere), "no error");
}

// The shell's `ulimit -f`: a file past it is refused before the run, and a write that
// still passes it (EFBIG) is explained with the limit.
TEST_F(DiskRoom, AFileBeyondTheFileSizeLimitIsRefusedWithTheLimit) {
  struct rlimit before {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
  if (before.rlim_max != RLIM_INFINITY && before.rlim_max < 200 * 1024) GTEST_SKIP() << "a hard limit below 200 KiB";
  struct rlimit lowered = before;
  lowered.rlim_cur = 200 * 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lowered), 0);
  const std::string checkpoint = (dir_ / "c.ckpt").string();
  const std::vector<PlannedWrite> fits{{checkpoint, 200 * 1024, "--checkpoint", 2}};  // the limit is per file
  const std::vector<PlannedWrite> too_large{{checkpoint, 200 * 1024 + 1, "--checkpoint"}};
  const std::string fits_verdict = io_error_of(fits), refusal = io_error_of(too_large);
  const std::string advice = file_too_large_advice();
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &before), 0);
  EXPECT_EQ(fits_verdict, "no error");
  EXPECT_EQ(refusal, "--checkpoint '" + checkpoint +
                         "' needs up to 200 KiB, and this shell's file-size limit is 200 KiB (ulimit -f 200); raise "
                         "it (ulimit -f unlimited) and run again");
  EXPECT_EQ(advice, "; it passed this shell's file-size limit, 200 KiB (ulimit -f 200): raise it (ulimit -f "
                    "unlimited) and run again");
}

// Paging to /dev/shm spares no RAM: train and profile warn. A path not made yet is judged
// by its folder's file system.
TEST(InMemoryFileSystem, APlaceInRamIsToldFromStorage) {
  struct statfs shm {};
  if (::statfs("/dev/shm", &shm) != 0 || shm.f_type != 0x01021994) GTEST_SKIP() << "no tmpfs at /dev/shm here";
  EXPECT_TRUE(in_memory_file_system("/dev/shm"));
  EXPECT_TRUE(in_memory_file_system("/dev/shm/not/made/yet.pages"));
  EXPECT_FALSE(in_memory_file_system("/proc/not-here"));
}

}  // namespace
}  // namespace poet
