#include "guarded_solve.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "poet/util/error.h"
#include "poet/util/write_all.h"

namespace poet::milp {
namespace {

// The outcome travels through the pipe as plain numbers: the header, then the solution.
struct Header {
  bool proven_optimal, proven_infeasible, has_solution;
  double objective, bound, seconds;
  long nodes;
  std::size_t columns;
};

}  // namespace

GuardedOutcome run_cbc_guarded(const MilpModel& model, const SolveOptions& options, const std::vector<double>* start,
                               bool preprocess) {
  int fds[2];
  if (::pipe(fds) != 0) throw IoError(std::string("cannot start the solver: pipe: ") + std::strerror(errno));
  const pid_t child = ::fork();
  if (child < 0) throw IoError(std::string("cannot start the solver: fork: ") + std::strerror(errno));
  if (child == 0) {
    ::close(fds[0]);
    CbcOutcome out;
    try {
      SolveOptions cbc_options = options;
      cbc_options.time_limit_s = 0.9 * options.time_limit_s;
      out = run_cbc(model, cbc_options, start, preprocess);
    } catch (const std::exception& e) {
      // Never unwind into the parent's code from the child.
      fmt::print(stderr, "CBC failed: {}\n", e.what());
      ::_exit(2);
    } catch (...) {
      ::_exit(2);
    }
    const Header h{out.proven_optimal, out.proven_infeasible, out.solution.has_value(), out.objective, out.bound,
                   out.seconds, out.nodes, out.solution ? out.solution->size() : 0};
    bool ok = write_all(fds[1], &h, sizeof h);
    if (ok && out.solution) ok = write_all(fds[1], out.solution->data(), out.solution->size() * sizeof(double));
    ::_exit(ok ? 0 : 1);
  }
  ::close(fds[1]);

  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(options.time_limit_s);
  std::vector<char> bytes;
  GuardedOutcome result;
  char buffer[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      ::kill(child, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000))) <= 0) continue;
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n <= 0) break;  // the child is done
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (result.timed_out) {
    result.outcome.seconds = options.time_limit_s;
    return result;
  }
  // A crash: a signal, or (under AddressSanitizer, which catches the signal) an exit
  // without a complete report.
  if (WIFSIGNALED(status) || WEXITSTATUS(status) != 0 || bytes.size() < sizeof(Header)) {
    result.crash = WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                                       : fmt::format("exit status {}", WEXITSTATUS(status));
    return result;
  }
  Header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  POET_CHECK(bytes.size() == sizeof h + h.columns * sizeof(double), "the solver's report is incomplete");
  CbcOutcome& out = result.outcome;
  out.proven_optimal = h.proven_optimal;
  out.proven_infeasible = h.proven_infeasible;
  out.objective = h.objective;
  out.bound = h.bound;
  out.seconds = h.seconds;
  out.nodes = h.nodes;
  if (h.has_solution) {
    out.solution.emplace(h.columns);
    std::memcpy(out.solution->data(), bytes.data() + sizeof h, h.columns * sizeof(double));
  }
  return result;
}

}  // namespace poet::milp
