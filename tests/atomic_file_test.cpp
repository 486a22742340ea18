// The atomic writer replaces regular files only: devices and FIFOs are written through,
// symlinks followed, and concurrent writers never see each other's temporary file.
#include "poet/util/atomic_file.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <thread>

#include "poet/util/error.h"
#include "poet/util/interrupt.h"

namespace poet {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = (fs::temp_directory_path() / "poet-atomic-XXXXXX").string();
    ASSERT_NE(::mkdtemp(name.data()), nullptr);
    dir_ = name;
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Only the given names are in the folder (no temporary file left behind).
  void expect_only(std::vector<std::string> names) const {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir_)) found.push_back(entry.path().filename().string());
    std::sort(found.begin(), found.end());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(found, names);
  }
  fs::path dir_;
};

TEST_F(AtomicFile, ReplacesARegularFileAndKeepsItsMode) {
  const fs::path path = dir_ / "out.txt";
  write_file_atomically(path, "first");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  write_file_atomically(path, "second");
  EXPECT_EQ(read_text(path), "second");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  expect_only({"out.txt"});
}

TEST_F(AtomicFile, AFailedWriteLeavesNothing) {
  EXPECT_THROW(write_file_atomically(dir_ / "missing" / "out.txt", "x"), IoError);
  EXPECT_THROW(write_file_atomically(dir_.string(), "x"), IoError);  // a folder is not replaced
  expect_only({});
}

TEST_F(AtomicFile, AFailedWriteSaysWhatToDo) {
  const auto message = [](const fs::path& path) {
    try {
      write_file_atomically(path.string(), "x");
    } catch (const IoError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(dir_).find("it is a folder: give the path of a file"), std::string::npos) << message(dir_);
  const fs::path missing = dir_ / "missing" / "out.txt";
  EXPECT_NE(message(missing).find("its folder does not exist"), std::string::npos) << message(missing);
  EXPECT_NE(message(missing).find(missing.string()), std::string::npos) << message(missing);
  // A folder that exists but takes no file is not called missing.
  EXPECT_NE(message("/proc/out.txt").find("its folder takes no new files"), std::string::npos)
      << message("/proc/out.txt");
}

TEST_F(AtomicFile, AnOutputPathIsJudgedBeforeAnyWrite) {
  EXPECT_EQ(output_path_problem((dir_ / "out.txt").string()), std::nullopt);
  EXPECT_EQ(output_path_problem("out.txt"), std::nullopt);  // the working folder
  EXPECT_NE(output_path_problem(dir_.string()).value_or("").find("is a folder"), std::string::npos);
  const std::string missing = (dir_ / "missing" / "out.txt").string();
  EXPECT_NE(output_path_problem(missing).value_or("").find((dir_ / "missing").string() + "' does not exist"),
            std::string::npos);
  try {
    check_output_path(missing, "--checkpoint");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--checkpoint: the folder", 0), 0u) << e.what();
  }
  expect_only({});  // nothing was written, and no probe file is left
}

// A name the folder cannot hold, once the temporary file's suffix is added, is refused
// before the work, not with "File name too long" after it.
TEST_F(AtomicFile, ANameTooLongForItsFolderIsJudgedBeforeAnyWrite) {
  const long name_max = ::pathconf(dir_.c_str(), _PC_NAME_MAX);
  ASSERT_GT(name_max, 20);
  const auto named = [&](long bytes) { return (dir_ / std::string(static_cast<std::size_t>(bytes), 'a')).string(); };
  EXPECT_EQ(output_path_problem(named(name_max - 11)), std::nullopt);
  write_file_atomically(named(name_max - 11), "fits");
  EXPECT_NE(output_path_problem(named(name_max - 10)).value_or("").find("shorten it"), std::string::npos);
  EXPECT_THROW(write_file_atomically(named(name_max - 10), "does not"), IoError);
}

// A folder that exists but takes no file fails at parse time, not after the work: /proc
// passes every permission check. A device is written in place, so its folder's is no matter.
TEST_F(AtomicFile, AnOutputFolderThatTakesNoNewFileIsJudgedBeforeAnyWrite) {
  ASSERT_TRUE(fs::is_directory("/proc"));
  EXPECT_EQ(output_path_problem("/proc/out.json").value_or(""),
            "the folder '/proc' takes no new files (a virtual file system such as /proc); write elsewhere");
  EXPECT_EQ(output_path_problem("/dev/null"), std::nullopt);
  EXPECT_EQ(new_file_problem(dir_.string()), std::nullopt);
  // A symlink is judged by where it points: the file is made beside its target.
  fs::create_symlink("/proc/out.json", dir_ / "into-proc");
  EXPECT_EQ(output_path_problem((dir_ / "into-proc").string()).value_or("").rfind("the folder '/proc' takes no new", 0),
            0u);
  fs::remove(dir_ / "into-proc");
  try {
    (void)make_output_folder("/proc", "--report");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--report: the folder '/proc' takes no new files (a virtual file system such as /proc); "
                           "give a folder you can write to");
  }
  expect_only({});
}

TEST_F(AtomicFile, AnOutputFolderIsMadeWithItsParentsOrRefusedNamingTheOption) {
  const auto made = make_output_folder((dir_ / "a" / "b").string(), "--report");
  EXPECT_NE(made, nullptr);  // made: removed at its end (or an interrupt) if still empty
  EXPECT_TRUE(fs::is_directory(dir_ / "a" / "b"));
  EXPECT_EQ(make_output_folder((dir_ / "a" / "b").string(), "--report"), nullptr);  // already there: fine, kept
  write_file_atomically(dir_ / "file", "x");
  for (const fs::path& blocked : {dir_ / "file", dir_ / "file" / "below"}) {
    try {
      (void)make_output_folder(blocked.string(), "--data-dir");
      ADD_FAILURE() << blocked << ": no error";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("--data-dir: cannot make the folder '" + blocked.string() + "'", 0), 0u) << message;
      EXPECT_NE(message.find("give a folder you can write to"), std::string::npos) << message;
    }
  }
  EXPECT_EQ(read_text(dir_ / "file"), "x");
  expect_only({"a", "file"});
}

// A run that fails before its first file (a full disk at `firmware --samples-dir NEW`) left
// the folder it made.
TEST_F(AtomicFile, AFolderTheRunMadeIsRemovedAtItsEndOnlyIfEmpty) {
  { const auto made = make_output_folder((dir_ / "failed").string(), "--samples-dir"); }
  {
    const auto made = make_output_folder((dir_ / "written").string(), "--samples-dir");
    write_file_atomically(dir_ / "written" / "train.bin", "x");
  }
  expect_only({"written"});
}

// An interrupted `train --report` or `sweep` leaves no empty folder of its own behind: the
// lock file in it goes first, then the folder. A folder that was there, or that holds a
// file the run did not register, is kept.
TEST_F(AtomicFile, AnInterruptRemovesTheEmptyFolderTheRunMade) {
  fs::create_directories(dir_ / "there");
  const pid_t child = ::fork();
  if (child == 0) {
    install_interrupt_handlers();
    const auto made = make_output_folder((dir_ / "made").string(), "--report");
    const auto there = make_output_folder((dir_ / "there").string(), "--report");
    const auto kept = make_output_folder((dir_ / "kept").string(), "--output-dir");
    std::ofstream(dir_ / "kept" / "sweep.partial.json") << "{}";  // progress a sweep keeps
    std::ofstream(dir_ / "made" / "poet.lock") << "";
    const RemoveOnInterrupt lock((dir_ / "made" / "poet.lock").string());
    ::raise(SIGTERM);
    ::_exit(99);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 143);
  expect_only({"kept", "there"});
  EXPECT_TRUE(fs::exists(dir_ / "kept" / "sweep.partial.json"));
}

// A profile's output onto an immutable file failed after minutes of measuring, blaming the
// folder: the file is named, with its flag, before anything runs.
TEST_F(AtomicFile, AnImmutableFileIsNamedBeforeTheWork) {
  const fs::path file = dir_ / "profile.json";
  write_file_atomically(file, "{}");
  const auto set_flags = [&](int flags) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    const bool done = fd >= 0 && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    if (fd >= 0) ::close(fd);
    return done;
  };
  if (!set_flags(FS_IMMUTABLE_FL)) GTEST_SKIP() << "cannot set the immutable flag here (no CAP_LINUX_IMMUTABLE, or a file system without it)";
  const std::optional<std::string> problem = output_path_problem(file.string());
  ASSERT_TRUE(set_flags(0));  // before any assertion can end the test: the folder must go
  EXPECT_EQ(problem.value_or(""), "'" + file.string() + "' is immutable (chattr +i), and cannot be replaced; clear the "
                                  "flag (chattr -i) or write elsewhere");
}

TEST_F(AtomicFile, DevNullStaysACharacterDevice) {
  write_file_atomically("/dev/null", "discarded");
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  expect_only({});
}

TEST_F(AtomicFile, AFifoIsWrittenThroughToItsReader) {
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read_text(fifo); });
  write_file_atomically(fifo, "through the pipe");
  reader.join();
  EXPECT_EQ(received, "through the pipe");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  expect_only({"pipe"});
}

// `-o /dev/stdout | jq` and `-o /dev/stdout >> log`: the link of /proc/self/fd/N reads
// `pipe:[1234]` for a pipe (no path: it was refused as a folder that takes no file), and a
// file the shell opened to append is appended to, not replaced.
TEST_F(AtomicFile, OnesOwnDescriptorIsWrittenThroughItself) {
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  const std::string through_pipe = "/dev/fd/" + std::to_string(pipe_ends[1]);
  EXPECT_EQ(output_path_problem(through_pipe), std::nullopt);
  write_file_atomically(through_pipe, "through the pipe");
  ::close(pipe_ends[1]);
  char received[32] = {};
  EXPECT_EQ(::read(pipe_ends[0], received, sizeof received), 16);
  ::close(pipe_ends[0]);
  EXPECT_EQ(std::string(received), "through the pipe");

  const fs::path log = dir_ / "log";
  std::ofstream(log) << "kept\n";
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  write_file_atomically("/proc/self/fd/" + std::to_string(fd), "appended\n");
  ::close(fd);
  EXPECT_EQ(read_text(log), "kept\nappended\n");
  expect_only({"log"});

  const auto closed = output_path_problem("/dev/fd/" + std::to_string(fd));
  ASSERT_TRUE(closed.has_value());
  EXPECT_NE(closed->find("names file descriptor " + std::to_string(fd) + ", which is not open"), std::string::npos)
      << *closed;
}

TEST_F(AtomicFile, ASymlinkStaysASymlinkAndItsFinalTargetGetsTheContents) {
  fs::create_directory(dir_ / "real");
  write_file_atomically(dir_ / "real" / "target.txt", "old");
  fs::create_symlink("real/target.txt", dir_ / "middle");  // relative, resolved from its folder
  fs::create_symlink(dir_ / "middle", dir_ / "link");       // a chain of two
  write_file_atomically(dir_ / "link", "new");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "middle"));
  EXPECT_EQ(read_text(dir_ / "real" / "target.txt"), "new");
  expect_only({"link", "middle", "real"});
  // A dangling symlink: its target is created.
  fs::create_symlink("real/created.txt", dir_ / "dangling");
  write_file_atomically(dir_ / "dangling", "made");
  EXPECT_TRUE(fs::is_symlink(dir_ / "dangling"));
  EXPECT_EQ(read_text(dir_ / "real" / "created.txt"), "made");
}

TEST_F(AtomicFile, TwoConcurrentWritersOfOnePathBothSucceedAndOneWholeContentsWins) {
  const fs::path path = dir_ / "shared.txt";
  const std::string a(200000, 'a'), b(300000, 'b');
  for (int round = 0; round < 20; ++round) {
    std::exception_ptr failure_a, failure_b;
    std::thread first([&] {
      try {
        write_file_atomically(path, a);
      } catch (...) {
        failure_a = std::current_exception();
      }
    });
    std::thread second([&] {
      try {
        write_file_atomically(path, b);
      } catch (...) {
        failure_b = std::current_exception();
      }
    });
    first.join();
    second.join();
    EXPECT_FALSE(failure_a) << "round " << round;
    EXPECT_FALSE(failure_b) << "round " << round;
    const std::string result = read_text(path);
    EXPECT_TRUE(result == a || result == b) << "round " << round << ": " << result.size() << " bytes";
  }
  expect_only({"shared.txt"});
}

// One output of several files (`plan -o p --device-plan p.bin --c-header p.h`): a write
// that fails replaces none of them, and leaves no temporary.
TEST_F(AtomicFile, FilesWrittenTogetherReplaceNoneWhenOneFails) {
  write_file_atomically(dir_ / "p.txt", "old plan");
  write_file_atomically(dir_ / "p.bin", "old bytes");
  const std::vector<FileContents> files{{(dir_ / "p.txt").string(), "new plan"},
                                        {(dir_ / "p.bin").string(), "new bytes"},
                                        {(dir_ / "missing" / "p.h").string(), "new header"}};
  EXPECT_THROW(write_files_atomically(files), IoError);
  EXPECT_EQ(read_text(dir_ / "p.txt"), "old plan");
  EXPECT_EQ(read_text(dir_ / "p.bin"), "old bytes");
  expect_only({"p.txt", "p.bin"});
  write_files_atomically(std::span(files).first(2));
  EXPECT_EQ(read_text(dir_ / "p.txt"), "new plan");
  EXPECT_EQ(read_text(dir_ / "p.bin"), "new bytes");
  expect_only({"p.txt", "p.bin"});
}

// An interrupt once the renames have begun waits for the last: here it comes while the
// second file, a FIFO, waits for its reader, and the third is still written.
// A FIFO among the files is written first, with interrupts heard: its open waits for a
// reader, and a Ctrl-C then ends the run (the wait was once deferred with the renames, and
// `poet plan -o fifo` ignored Ctrl-C until something read the FIFO). No file is replaced.
TEST_F(AtomicFile, AnInterruptWhileAFifoWaitsForItsReaderEndsTheWriteAndReplacesNothing) {
  const fs::path first = dir_ / "a.txt", fifo = dir_ / "fifo", last = dir_ / "c.txt";
  write_file_atomically(first, "old");
  write_file_atomically(last, "old");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    install_interrupt_handlers();
    const std::vector<FileContents> files{{first.string(), "new"}, {fifo.string(), "through"}, {last.string(), "new"}};
    write_files_atomically(files);
    ::_exit(0);  // the signal should end the process first
  }
  const auto temporaries = [&] {
    int n = 0;
    for (const auto& entry : fs::directory_iterator(dir_))
      n += entry.path().filename().string().find(".tmp-") != std::string::npos;
    return n;
  };
  while (temporaries() < 2) std::this_thread::yield();  // both staged: the FIFO's open is next
  ASSERT_EQ(::kill(child, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 143);
  EXPECT_EQ(read_text(first), "old");
  EXPECT_EQ(read_text(last), "old");
  expect_only({"a.txt", "c.txt", "fifo"});
}

}  // namespace
}  // namespace poet
