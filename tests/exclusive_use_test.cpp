// One run at a time per checkpoint, sweep folder or report folder (util/exclusive_use.h).
#include "poet/util/exclusive_use.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "scratch_folder.h"

namespace poet {
namespace {

using ExclusiveUseTest = ScratchFolderTest;

TEST_F(ExclusiveUseTest, ASecondUseIsRefusedByOptionPathAndHolderUntilTheFirstEnds) {
  const std::string checkpoint = (dir_ / "c.ckpt").string();
  std::optional<ExclusiveUse> first;
  first.emplace(checkpoint, "--checkpoint");
  EXPECT_TRUE(std::filesystem::exists(checkpoint + ".lock"));
  EXPECT_EQ(error_of([&] { ExclusiveUse second(checkpoint, "--checkpoint"); }),
            "--checkpoint '" + checkpoint + "' is in use by another poet run (process " + std::to_string(::getpid()) +
                "); wait for it to end, or give this run another --checkpoint");
  EXPECT_EQ(error_of([&] { ExclusiveUse other((dir_ / "d.ckpt").string(), "--checkpoint"); }), "no error");
  first.reset();
  EXPECT_FALSE(std::filesystem::exists(checkpoint + ".lock"));
  EXPECT_EQ(error_of([&] { ExclusiveUse again(checkpoint, "--checkpoint"); }), "no error");
}

// A link to the checkpoint another run holds names the same file: its writes would replace
// the other run's epochs.
TEST_F(ExclusiveUseTest, ALinkToAHeldFileIsRefused) {
  const std::string checkpoint = (dir_ / "c.ckpt").string(), link = (dir_ / "link.ckpt").string();
  std::ofstream(checkpoint) << "x";
  std::filesystem::create_symlink("c.ckpt", link);
  const ExclusiveUse first(checkpoint, "--checkpoint");
  EXPECT_NE(error_of([&] { ExclusiveUse second(link, "--checkpoint"); }).find("is in use by another poet run"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(link + ".lock"));
}

TEST_F(ExclusiveUseTest, ALockFileLeftByAnEndedRunBlocksNothing) {
  const std::string checkpoint = (dir_ / "c.ckpt").string();
  std::ofstream(checkpoint + ".lock") << "99999999";  // as a killed run leaves it
  EXPECT_EQ(error_of([&] { ExclusiveUse use(checkpoint, "--checkpoint"); }), "no error");
}

// A run killed mid-write (kill -9, the OOM killer) leaves its temporary beside the file;
// the next run that holds the file's lock removes it, and nothing else.
TEST_F(ExclusiveUseTest, TheLockHolderRemovesTemporariesAKilledWriteLeft) {
  const std::string checkpoint = (dir_ / "c.ckpt").string();
  for (const char* name : {"c.ckpt.tmp-Ab12Cd", "c.ckpt.tmp-longer1", "c.ckpt.tmp-", "d.ckpt.tmp-Ab12Cd", "c.ckpt"})
    std::ofstream(dir_ / name) << "x";
  std::filesystem::create_directory(dir_ / "c.ckpt.tmp-folder");
  { const ExclusiveUse use(checkpoint, "--checkpoint"); }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "c.ckpt.tmp-Ab12Cd"));
  for (const char* kept : {"c.ckpt.tmp-longer1", "c.ckpt.tmp-", "d.ckpt.tmp-Ab12Cd", "c.ckpt", "c.ckpt.tmp-folder"})
    EXPECT_TRUE(std::filesystem::exists(dir_ / kept)) << kept;
}

// A folder may be the user's working folder: only the named files' temporaries go.
TEST_F(ExclusiveUseTest, AFoldersHolderRemovesTheTemporariesOfTheFilesItNames) {
  for (const char* name : {"sweep.json.tmp-Ab12Cd", "sweep.csv.tmp-Zz9yX8", "notes.txt.tmp-Ab12Cd", "sweep.json"})
    std::ofstream(dir_ / name) << "x";
  constexpr std::array<std::string_view, 2> kNamed{"sweep.json", "sweep.csv"};
  { const ExclusiveUse use(dir_.string(), "--output-dir", kNamed); }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "sweep.json.tmp-Ab12Cd"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "sweep.csv.tmp-Zz9yX8"));
  for (const char* kept : {"notes.txt.tmp-Ab12Cd", "sweep.json"}) EXPECT_TRUE(std::filesystem::exists(dir_ / kept)) << kept;
}

TEST_F(ExclusiveUseTest, AFolderIsLockedByAFileInside) {
  EXPECT_EQ(ExclusiveUse::lock_path(dir_.string()), (dir_ / "poet.lock").string());
  const ExclusiveUse sweep(dir_.string(), "--output-dir");
  EXPECT_TRUE(std::filesystem::exists(dir_ / "poet.lock"));
  EXPECT_NE(error_of([&] { ExclusiveUse second(dir_.string(), "--output-dir"); }).find("is in use by another poet run"),
            std::string::npos);
}

// Another process's lock, held until that process ends, however it ends.
TEST_F(ExclusiveUseTest, AnotherProcesssLockEndsWithIt) {
  const std::string checkpoint = (dir_ / "c.ckpt").string();
  int locked[2], release[2];
  ASSERT_EQ(::pipe(locked), 0);
  ASSERT_EQ(::pipe(release), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const ExclusiveUse held(checkpoint, "--checkpoint");
    char byte = 1;
    if (::write(locked[1], &byte, 1) != 1 || ::read(release[0], &byte, 1) < 0) ::_exit(1);
    ::_exit(0);  // without the destructor: as a killed run, the lock file stays
  }
  char byte = 0;
  ASSERT_EQ(::read(locked[0], &byte, 1), 1);
  EXPECT_NE(error_of([&] { ExclusiveUse mine(checkpoint, "--checkpoint"); })
                .find("(process " + std::to_string(child) + ")"),
            std::string::npos);
  ASSERT_EQ(::write(release[1], &byte, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(std::filesystem::exists(checkpoint + ".lock"));
  EXPECT_EQ(error_of([&] { ExclusiveUse mine(checkpoint, "--checkpoint"); }), "no error");
  for (const int fd : {locked[0], locked[1], release[0], release[1]}) ::close(fd);
}

}  // namespace
}  // namespace poet
