#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <system_error>

#include "commands.h"
#include "graph_source.h"
#include "help_format.h"
#include "parse_errors.h"
#include "poet/kernels/thread_setting.h"
#include "poet/util/disk_room.h"
#include "poet/util/error.h"
#include "poet/util/interrupt.h"
#include "poet/util/quoting.h"

namespace {

using namespace poet::cli;

// libopenblas (loaded for CoinUtils' LAPACK; poet's own GEMM is oneDNN's) starts a thread a
// core as it loads, and each takes a 128 MiB buffer at once. Under an address-space limit
// (`ulimit -v 200000`) the buffer cannot be had, and OpenBLAS 0.3.21 retries forever
// (fixed upstream in 0.3.30, OpenBLAS issue 5289): that thread spun on a core through the run
// and the process hung at its exit, joining it. Nothing poet runs needs those threads. The
// setting is read as the library loads, before main and before anything main could set it
// in (a .preinit_array's setenv is undone by the C library's own start), so under such a
// limit poet starts itself again with it. A user's own setting is kept.
void one_openblas_thread_under_an_address_space_limit(char** argv) {
  struct rlimit space {};
  if (::getrlimit(RLIMIT_AS, &space) != 0 || space.rlim_cur == RLIM_INFINITY) return;
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return;
  ::setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/0);
  ::execv("/proc/self/exe", argv);  // returns only if it failed: run on as before
}

// A command started with a standard stream closed (`2>&-`) must not let the next file it
// opens (a checkpoint, a page file) take that stream's number, or its messages would be
// written into that file. A closed stream gets /dev/null: stdin and stderr as an empty
// input and a sink, stdout read-only, so that writing the answer fails and is reported
// (checked_stdout).
void keep_standard_streams_open() {
  for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int null = ::open("/dev/null", fd == STDERR_FILENO ? O_WRONLY : O_RDONLY);
    if (null >= 0 && null != fd) ::dup2(null, fd), ::close(null);
  }
}

// Messages on stderr (progress, notes, errors) are for the person watching: a stderr that
// cannot be written (`2>/dev/full`, a log on a disk that filled) must not end the work, as
// fmt's exception on a short write would (or abort the process, thrown while reporting an
// error). stderr becomes an unbuffered stream on the same descriptor whose writes never
// fail; the GNU C library lets stderr be set (its manual, "Standard Streams").
void never_fail_on_stderr() {
  static const cookie_io_functions_t kWriteIgnoringErrors{
      .read = nullptr,
      .write = [](void*, const char* data, std::size_t size) -> ssize_t {
        for (std::size_t done = 0; done < size;) {
          const ssize_t n = ::write(STDERR_FILENO, data + done, size - done);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) break;  // the rest is lost, as the reader is
          done += static_cast<std::size_t>(n);
        }
        return static_cast<ssize_t>(size);
      },
      .seek = nullptr,
      .close = nullptr};
  if (FILE* stream = ::fopencookie(nullptr, "w", kWriteIgnoringErrors)) {
    std::setvbuf(stream, nullptr, _IONBF, 0);
    stderr = stream;
  }
}

int run(int argc, char** argv) {
  // Ctrl-C, SIGTERM or a closed terminal: no child process, temporary file or page file left behind.
  poet::install_interrupt_handlers();
  CLI::App app{
      "poet: energy-optimal training under a memory budget, by rematerialization and paging.\n"
      "Run 'poet <command> --help' for a command's options."};
  app.set_version_flag("--version", "poet 0.1.0");
  app.formatter(std::make_shared<HelpFormatter>());  // before the commands: they take it from here
  app.require_subcommand(1);
  add_models_command(app);
  add_platforms_command(app);
  add_graph_command(app);
  add_plan_command(app);
  add_simulate_command(app);
  add_check_plan_command(app);
  add_show_command(app);
  add_solve_command(app);
  add_sweep_command(app);
  add_profile_command(app);
  add_train_command(app);
  add_firmware_command(app);
  // After the options are read (so --help and --version answer whatever the setting, on
  // stdout), before any command's work: libgomp would stop or crash mid-run, and a file on
  // stdout takes it before anything is printed.
  app.parse_complete_callback([] {
    poet::kernels::check_thread_setting();
    give_stdout_to_its_file();
  });
  app.failure_message(parse_error_message);
  // Messages go out on one line (one_line): a name from a file may hold a terminal's escape
  // sequences.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
  } catch (const ExitWith& e) {
    return e.code;
  } catch (const NoScheduleError& e) {
    fmt::print(stderr, "poet: error: {}\n", poet::one_line(e.what()));
    return kExitNoSchedule;
  } catch (const poet::InputError& e) {
    fmt::print(stderr, "poet: error: {}\n", poet::one_line(e.what()));
    return kExitBadInput;
  } catch (const poet::IoError& e) {
    fmt::print(stderr, "poet: error: {}\n", poet::one_line(e.what()));
    return kExitFailure;
  } catch (const poet::InternalError& e) {
    fmt::print(stderr, "poet: {}\n", poet::one_line(e.what()));
    return kExitInternal;
  } catch (const std::bad_alloc&) {
    // Sizes are bounded where they are read; this is the system running out under us.
    fmt::print(stderr, "poet: error: out of memory; try a smaller model, batch or graph, or free memory\n");
    return kExitFailure;
  } catch (const std::filesystem::filesystem_error& e) {
    fmt::print(stderr, "poet: error: {}\n", poet::one_line(e.what()));
    return kExitFailure;
  } catch (const std::system_error& e) {
    // fmt throws this when a write to stdout fails (a full disk, a closed stdout) before
    // the final flush would: checked_stdout says so.
    if (std::ferror(stdout)) return kExitFailure;
    // std::thread's "Resource temporarily unavailable": say which limit.
    fmt::print(stderr, "poet: error: {}{}\n", poet::one_line(e.what()), poet::process_limit_advice(e.code().value()));
    return kExitFailure;
  } catch (const std::exception& e) {
    // Every failure poet foresees is one of the kinds above: anything else is a bug.
    fmt::print(stderr, "poet: internal error: unexpected {} (this is a bug in poet)\n", poet::one_line(e.what()));
    return kExitInternal;
  } catch (...) {
    fmt::print(stderr, "poet: internal error: an unknown exception (this is a bug in poet)\n");
    return kExitInternal;
  }
  return kExitOk;
}

// A write past the shell's file-size limit (`ulimit -f`) raises SIGXFSZ, whose default
// action kills the process mid-write: a checkpoint's temporary and the run's lock were
// left behind. Ignored, the write fails with EFBIG and is reported like a full disk, after
// the usual clean-up.
void fail_writes_past_the_file_size_limit() { ::signal(SIGXFSZ, SIG_IGN); }

// stdio reports a failed write (a full disk under `poet solve --json > out.json`, a closed
// stdout) only at the flush: without this check a truncated answer would exit 0.
int checked_stdout(int code) {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return code;
  const int error = errno;
  fmt::print(stderr, "poet: error: could not write the output to standard output: {}{}\n", std::strerror(error),
             error == ENOSPC  ? "; free space where it is redirected, or redirect it to another disk"
             : error == EFBIG ? poet::file_too_large_advice()
                              : "; check where standard output is redirected");
  return code == kExitOk ? kExitFailure : code;
}

}  // namespace

int main(int argc, char** argv) {
  one_openblas_thread_under_an_address_space_limit(argv);
  keep_standard_streams_open();
  never_fail_on_stderr();
  fail_writes_past_the_file_size_limit();
  return checked_stdout(run(argc, argv));
}
