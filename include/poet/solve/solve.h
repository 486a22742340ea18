// The POET optimizer: the energy-optimal schedule under a RAM budget and a deadline, as a
// MILP (the paper's Algorithm 1) solved with COIN-OR CBC. Every schedule it returns is
// turned into a plan and judged by the simulator; the figures it reports are the
// simulator's, and the MILP's own objective is kept beside them as a check.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "poet/cost/cost_model.h"
#include "poet/graph/graph.h"
#include "poet/schedule/schedule.h"
#include "poet/simulate/simulator.h"

namespace poet {

enum class SolveMode { RematAndPaging, RematOnly, PagingOnly };
enum class SolveObjective { Energy, Time };
// reference: the reference implementation's model exactly (the deadline counts compute
//   only, the budget activations only, a page-in is charged from the next stage).
// strict: the budget also holds fixed memory, a page-in takes RAM during its whole stage
//   (and that stage's nodes may read it), and the deadline counts paging time too (none of
//   it assumed hidden).
enum class Accounting { Reference, Strict };

struct SolveOptions {
  std::int64_t ram_budget_bytes = 0;
  std::optional<double> deadline_s;  // none: no deadline
  SolveMode mode = SolveMode::RematAndPaging;
  SolveObjective objective = SolveObjective::Energy;
  Accounting accounting = Accounting::Strict;
  bool count_gradients = false;  // strict: gradients and optimizer state in fixed memory
  Optimizer optimizer = Optimizer::SGD;
  double time_limit_s = 60;
  double relative_gap = 1e-4;
  int threads = 2;
  // A work limit instead of a time limit: CBC stops after this many branch-and-bound nodes
  // and searches on one thread (its threads make the search order depend on timing), so the
  // answer is the same at any speed as long as time_limit_s is not reached first. Tests use
  // it with a time limit far beyond the work. None: no node limit, `threads` threads.
  std::optional<long> max_nodes;
  int seed = 0;
  int log_level = 0;   // CBC's own log on stdout when > 0
  bool progress = true;  // solves longer than a second report on stderr
  // Also write the model as MPS or LP (by the path's extension) for another solver. Its
  // objective is in units of the compute-once energy (or time), memory in units of the
  // largest tensor.
  std::string write_model_path;
  // Also write the reported schedule as a solution of that model (every column, "name
  // value" lines: what solution_path reads, and a MIP start for Gurobi or HiGHS).
  std::string write_start_path;
  // Skip CBC: the eviction heuristic's schedule (see src/solve/eviction_heuristic.h), with
  // the compute-once lower bound. Takes a second where the MILP of a 500-node graph does
  // not finish its root LP in minutes.
  bool heuristic_only = false;
  // Instead of running CBC, read another solver's solution of the model (as written with
  // write_model_path, same options); it is held to the model's constraints and simulated.
  std::string solution_path;
  // The bounds that know the problem (covering; see lower_bound.h) besides compute-once and
  // CBC's. Off only to compare them, or to get an optimum that does not rest on them.
  bool problem_bounds = true;
  // When set and it turns true (Ctrl-C: StopOnInterrupt, poet/util/interrupt.h), the solve
  // winds up as at its time limit and answers with the best schedule and bound so far. The
  // heuristic step under way ends first (within 0.6 s on resnet50, docs/RELIABILITY.md).
  const std::atomic<bool>* stop = nullptr;
  bool stop_requested() const { return stop != nullptr && stop->load(); }

  // How the simulator counts memory under this accounting (no budget set): strict holds the
  // parameters (with count_gradients also gradients and optimizer state) in the budget;
  // reference holds activations only.
  SimulationOptions counting() const;
};

enum class SolveStatus { Optimal, Feasible, Infeasible, NoSolution };
std::string_view solve_status_name(SolveStatus s);

// Where the proven lower bound comes from: every node computed once; the covering bound
// (tensors that cannot all stay in RAM, src/solve/lower_bound_covering.h); CBC's own bound
// on the full MILP.
enum class BoundSource { ComputeOnce, Covering, Cbc };
std::string_view bound_source_name(BoundSource s);

struct SolveResult {
  SolveStatus status = SolveStatus::NoSolution;
  std::optional<Schedule> schedule;
  std::optional<SimulationResult> simulation;  // of the schedule's plan: the figures to report
  // The simulator's figure for the schedule under the objective: energy in J, or compute
  // time in s under SolveObjective::Time (the MILP's own objective is checked against it).
  double objective = 0;
  double best_bound = 0;         // the proven lower bound, same unit
  double gap = 0;                // (incumbent - bound) / incumbent
  double solve_time_s = 0;        // wall clock of the whole solve, heuristic and model included
  BoundSource bound_source = BoundSource::ComputeOnce;
  // Wall clock of the parts: the start schedules, building the MILP, CBC on it, the bound.
  double starts_time_s = 0, model_time_s = 0, cbc_time_s = 0, bound_time_s = 0;
  long nodes = 0;
  int variables = 0, constraints = 0;
  // Large-neighbourhood search after the starts (src/solve/neighbourhood_search.h): its
  // wall clock, the windows whose MILP CBC solved, and those whose solution was spliced in
  // because the simulator found it cheaper.
  double search_time_s = 0;
  int windows_solved = 0, windows_improved = 0;
  std::optional<std::int64_t> smallest_feasible_budget;  // when the budget is below it
  std::string message;           // why there is no schedule, in words
  bool stopped = false;          // options.stop ended the solve before its limit
};

SolveResult solve(const Graph& g, const GraphCosts& costs, const SolveOptions& options);

}  // namespace poet
