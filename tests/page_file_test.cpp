// A page file left by a killed run is recognised as poet's and reused; anything else at
// the path is never touched.
#include "poet/paging/page_file.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "poet/paging/file_pager.h"
#include "poet/util/error.h"
#include "poet/util/interrupt.h"

namespace poet {
namespace {

namespace fs = std::filesystem;

class PageFileOwnership : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = (fs::temp_directory_path() / "poet-pagefile-XXXXXX").string();
    ASSERT_NE(::mkdtemp(name.data()), nullptr);
    dir_ = name;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// A run killed with kill -9 while its page file exists: the file stays behind. With
// `unreaped`, the run is left a zombie (ended, not reaped), its pid set there.
void leave_page_file_of_a_killed_run(const std::string& path, pid_t* unreaped = nullptr) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t run = ::fork();
  if (run == 0) {
    paging::PageFile file(path, false);
    ::write(ready[1], "r", 1);
    for (;;) ::pause();
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ::kill(run, SIGKILL);
  if (unreaped) {
    siginfo_t info{};
    ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(run), &info, WEXITED | WNOWAIT), 0);
    *unreaped = run;
  } else {
    ::waitpid(run, nullptr, 0);
  }
  ASSERT_TRUE(fs::exists(path));
}

void expect_refused(const std::string& path) {
  try {
    paging::PageFile file(path, false);
    ADD_FAILURE() << "expected a refusal";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("poet does not overwrite files it did not create"), std::string::npos)
        << e.what();
  }
}

TEST_F(PageFileOwnership, AStalePageFileOfPoetsIsReusedAndThenRemoved) {
  const std::string path = (dir_ / "pages").string();
  leave_page_file_of_a_killed_run(path);
  EXPECT_TRUE(paging::PageFile::is_stale(path));
  {
    paging::PageFile file(path, false);
    EXPECT_EQ(file.path(), path);
    EXPECT_FALSE(paging::PageFile::is_stale(path)) << "ours now, and we run";
  }
  EXPECT_FALSE(fs::exists(path));
}

// In a folder each run makes a new file: those of killed runs are removed by the next run
// there, and nothing else is: a running poet's file, a file of another name, a foreign
// file that only has the name.
TEST_F(PageFileOwnership, ANewFileInAFolderRemovesThoseOfKilledRuns) {
  const std::string killed = (dir_ / "poet-pages-KILLED").string(), other_name = (dir_ / "pages").string();
  leave_page_file_of_a_killed_run(killed);
  leave_page_file_of_a_killed_run(other_name);
  const std::string foreign = (dir_ / "poet-pages-MINE").string();
  std::ofstream(foreign) << "someone's data\n";
  const paging::PageFile running(dir_.string(), false);
  {
    const paging::PageFile next(dir_.string(), false);
    EXPECT_FALSE(fs::exists(killed));
    EXPECT_TRUE(fs::exists(running.path()));
    EXPECT_TRUE(fs::exists(other_name));
    EXPECT_TRUE(fs::exists(foreign));
  }
  EXPECT_TRUE(fs::exists(running.path()));
}

// A run killed but not yet reaped (a container's init may never reap it) is a zombie: it
// holds no lock and runs no more, so its page file is stale.
TEST_F(PageFileOwnership, AZombiesPageFileIsStale) {
  const std::string path = (dir_ / "pages").string();
  pid_t zombie = 0;
  leave_page_file_of_a_killed_run(path, &zombie);
  EXPECT_TRUE(paging::PageFile::is_stale(path));
  ::waitpid(zombie, nullptr, 0);
  EXPECT_TRUE(paging::PageFile::is_stale(path));
}

// Reading a FIFO's header would wait for a writer for ever: a FIFO is foreign, at once.
TEST_F(PageFileOwnership, AFifoIsForeignWithoutWaitingForAWriter) {
  const std::string fifo = (dir_ / "poet-pages-FIFO").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(paging::PageFile::owner_of(fifo).kind, paging::PageFile::Owner::kNotPoets);
  expect_refused(fifo);
  { const paging::PageFile in_folder(dir_.string(), false); }
  EXPECT_TRUE(fs::exists(fifo));
}

// A creator whose number names no process here may still run (in another PID namespace: a
// container of the same host name): the lock it holds on its file keeps the file.
TEST_F(PageFileOwnership, ALockedPageFileIsNotStaleWhateverItsHeaderSays) {
  const std::string path = (dir_ / "poet-pages-OTHERNS").string();
  leave_page_file_of_a_killed_run(path);
  ASSERT_TRUE(paging::PageFile::is_stale(path));
  const int held = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  EXPECT_FALSE(paging::PageFile::is_stale(path));
  { const paging::PageFile next(dir_.string(), false); }
  EXPECT_TRUE(fs::exists(path));
  ::close(held);
  EXPECT_TRUE(paging::PageFile::is_stale(path));
}

TEST_F(PageFileOwnership, AForeignFileIsRefusedAndKept) {
  const std::string path = (dir_ / "precious").string();
  std::ofstream(path) << "someone's data\n";
  EXPECT_FALSE(paging::PageFile::is_stale(path));
  expect_refused(path);
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "someone's data");
}

TEST_F(PageFileOwnership, ThePageFileOfARunningPoetIsRefused) {
  const std::string path = (dir_ / "pages").string();
  paging::PageFile running(path, false);
  EXPECT_FALSE(paging::PageFile::is_stale(path));
  const paging::PageFile::Owner owner = paging::PageFile::owner_of(path);
  EXPECT_EQ(owner.kind, paging::PageFile::Owner::kRunning);
  EXPECT_EQ(owner.pid, ::getpid());
  expect_refused(path);
  EXPECT_TRUE(fs::exists(path));
  // Before any planning, the option names the run that holds it.
  try {
    check_page_file_location(path, "--page-file");
    ADD_FAILURE() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is the page file of a poet run still running (process " +
                                         std::to_string(::getpid()) + ")"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(PageFileOwnership, ASymlinkToAStalePageFileIsNotFollowed) {
  const std::string real = (dir_ / "pages").string(), link = (dir_ / "link").string();
  leave_page_file_of_a_killed_run(real);
  fs::create_symlink(real, link);
  EXPECT_FALSE(paging::PageFile::is_stale(link));
  expect_refused(link);
}

TEST_F(PageFileOwnership, AnInterruptedRunRemovesItsPageFile) {
  const std::string path = (dir_ / "pages").string();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t run = ::fork();
  if (run == 0) {
    install_interrupt_handlers();  // as the command line does
    paging::PageFile file(path, false);
    ::write(ready[1], "r", 1);
    for (;;) ::pause();
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_TRUE(fs::exists(path));
  ::kill(run, SIGINT);
  int status = 0;
  ::waitpid(run, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130);
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace poet
