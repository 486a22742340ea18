// Runs a sweep's tasks in child processes, a few at a time: solves are single-threaded in
// places and CBC may crash or overrun, and a process keeps each of those to its own row.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "poet/sweep/sweep.h"
#include "poet/util/child_process.h"
#include "poet/util/json_file.h"
#include "poet/util/progress_bar.h"
#include "poet/util/write_all.h"

namespace poet {
namespace {

using Clock = std::chrono::steady_clock;

struct Running {
  std::size_t task;
  std::unique_ptr<ChildProcess> process;
  Clock::time_point started;
};

// Why a task's process died, in words: SIGKILL from outside is, on a machine left alone,
// the kernel's answer to memory running out (the tasks run side by side, each with its own
// solve).
std::string death_reason(int signal_number) {
  if (signal_number == SIGKILL)
    return "the method's process was killed (SIGKILL), as the kernel kills one when memory runs out; run fewer "
           "tasks at once (--jobs 1) or free memory";
  return fmt::format("the method's process died of signal {} ({}): a bug in poet", signal_number,
                     ::strsignal(signal_number));
}

Running spawn(const Graph& g, const GraphCosts& costs, const std::vector<SweepTask>& tasks, std::size_t index,
              const SweepSettings& settings) {
  auto process = std::make_unique<ChildProcess>("a sweep task", [&](int report_fd) {
    SweepRow row;
    row.task = tasks[index];
    try {
      row = run_sweep_task(g, costs, tasks[index], settings);
    } catch (const std::exception& e) {
      row.status = "error";
      row.reason = e.what();
    }
    const std::string text = json_text(sweep_row_to_json(row));
    return write_all(report_fd, text.data(), text.size()) ? 0 : 1;
  });
  return {index, std::move(process), Clock::now()};
}

}  // namespace

std::vector<SweepRow> run_sweep(const Graph& g, const GraphCosts& costs, const std::vector<SweepTask>& tasks,
                                const SweepSettings& settings, SweepRowsSoFar finished,
                                const std::function<void(const SweepRowsSoFar&)>& on_row) {
  finished.resize(tasks.size());
  std::vector<std::size_t> to_run;
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (!finished[i]) to_run.push_back(i);
  std::vector<Running> running;
  std::size_t next = 0, done = tasks.size() - to_run.size();
  std::optional<ProgressBar> bar;
  if (settings.progress) bar.emplace("  sweep", "task");
  // A solve stops itself at its limit; a task past twice that (plus slack for the baselines)
  // is stuck and is ended.
  const double overrun_s = 2 * settings.time_limit_s + 60;
  while (done < tasks.size()) {
    while (running.size() < static_cast<std::size_t>(std::max(settings.jobs, 1)) && next < to_run.size())
      running.push_back(spawn(g, costs, tasks, to_run[next++], settings));
    std::vector<ChildProcess*> processes;
    for (const Running& r : running) processes.push_back(r.process.get());
    ChildProcess::collect_reports(processes, 500);
    for (std::size_t k = 0; k < running.size();) {
      Running& r = running[k];
      bool killed = false;
      if (!r.process->done() && std::chrono::duration<double>(Clock::now() - r.started).count() > overrun_s) {
        r.process->kill();
        killed = true;
      }
      if (!r.process->done() && !killed) {
        ++k;
        continue;
      }
      const int status = r.process->wait();
      SweepRow& row = finished[r.task].emplace();
      try {
        if (killed || r.process->report().empty()) throw std::runtime_error("no result");
        row = sweep_row_from_json(nlohmann::json::parse(r.process->report()));
      } catch (const std::exception&) {
        row = SweepRow{};
        row.task = tasks[r.task];
        row.status = "error";
        row.reason = killed ? fmt::format("stopped after {:.0f} s", overrun_s)
                     : WIFSIGNALED(status) ? death_reason(WTERMSIG(status))
                                           : "the method's process ended without a result";
      }
      ++done;
      if (bar)
        bar->update(static_cast<std::int64_t>(done), static_cast<std::int64_t>(tasks.size()),
                    fmt::format("{}: {}", task_label(row.task),
                                row.found ? fmt::format("{:.4g} J", row.energy_j) : row.status));
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      if (on_row) on_row(finished);
    }
  }
  if (bar) bar->finish();
  std::vector<SweepRow> rows;
  for (auto& row : finished) rows.push_back(std::move(*row));
  return rows;
}

}  // namespace poet
