#include "guarded_solve.h"

#include <sys/wait.h>

#include <chrono>
#include <cstring>

#include "poet/util/child_process.h"
#include "poet/util/error.h"
#include "poet/util/write_all.h"

namespace poet::solve_internal {
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
  ChildProcess child("the solver (CBC)", [&](int report_fd) {
    SolveOptions cbc_options = options;
    cbc_options.time_limit_s = 0.9 * options.time_limit_s;
    const CbcOutcome out = run_cbc(model, cbc_options, start, preprocess);
    const Header h{out.proven_optimal, out.proven_infeasible, out.solution.has_value(), out.objective, out.bound,
                   out.seconds, out.nodes, out.solution ? out.solution->size() : 0};
    bool ok = write_all(report_fd, &h, sizeof h);
    if (ok && out.solution) ok = write_all(report_fd, out.solution->data(), out.solution->size() * sizeof(double));
    return ok ? 0 : 1;
  });

  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(options.time_limit_s);
  GuardedOutcome result;
  ChildProcess* const children[] = {&child};
  while (!child.done()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || options.stop_requested()) {
      result.timed_out = true;
      child.kill();
      break;
    }
    ChildProcess::collect_reports(children, static_cast<int>(std::min<long long>(left, 1000)));
  }
  const int status = child.wait();
  if (result.timed_out) {
    result.outcome.seconds = options.time_limit_s;
    return result;
  }
  const std::string& bytes = child.report();
  // A crash: a signal, or (under AddressSanitizer, which catches the signal) an exit
  // without a complete report.
  if (WIFSIGNALED(status) || WEXITSTATUS(status) != 0 || bytes.size() < sizeof(Header)) {
    result.crash = describe_wait_status(status);
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

}  // namespace poet::solve_internal
