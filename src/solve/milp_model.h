// The POET MILP over a training graph: variables for the lower-triangular entries of R,
// S_RAM, S_AUX, M_in, M_out, Checkmate's memory variables U and FREE, and the constraints of
// the paper's Algorithm 1. Coefficients are scaled (bytes by the largest tensor, joules and
// seconds by the graph's totals) so the matrix is well conditioned.
//
// The model can also be a window of it: the stages [begin, end) only, over the tensors
// that matter there, with the state entering stage `begin` and the state after stage
// end - 1 either fixed or priced. Large-neighbourhood search solves windows with the rest
// of a schedule fixed (src/solve/neighbourhood_search.h); a decomposition bound solves them
// with priced boundaries. The full model is the window of every stage with nothing at its
// boundaries (Window{}), column for column and row for row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "poet/schedule/schedule.h"
#include "poet/solve/solve.h"

namespace poet::solve_internal {

struct Row {
  std::vector<int> columns;
  std::vector<double> values;
  double lower, upper;
};

// Which part of the MILP a MilpModel holds. Prices are in the objective's unit (J, or s
// with SolveObjective::Time), per tensor indexed by node; an empty vector prices nothing.
struct Window {
  enum class Boundary { Fixed, Priced };

  std::size_t begin = 0;
  std::optional<std::size_t> end;  // none: the graph's size
  // The tensors with columns. Always added: the window's own nodes, their inputs, and the
  // tensors a fixed boundary holds. Every other tensor is absent from RAM and storage
  // throughout the window (a restriction: a neighbourhood, not a relaxation). None: every
  // tensor before `end`.
  std::optional<std::vector<NodeId>> tensors;

  // Tensors not in `free_tensors` keep `pinned_to`'s decisions (R, S_RAM, S_AUX, M_in,
  // M_out) in every stage of the window: their columns are fixed, so that a long window
  // can move a few tensors' decisions. Pinned decisions are constants, not columns: the
  // objective leaves out their costs (and boundary prices). None: every tensor is free.
  std::optional<std::vector<NodeId>> free_tensors;
  const Schedule* pinned_to = nullptr;  // required with free_tensors; must outlive the constructor

  // The state entering stage `begin` (tensors before it).
  Boundary entry = Boundary::Fixed;
  SparseRow entry_ram, entry_aux;  // Fixed: S_RAM[begin] and S_AUX[begin] are exactly these
  std::vector<double> entry_ram_price, entry_aux_price;  // Priced: per tensor resident / on storage

  // The state after stage end - 1, S_RAM[end] and S_AUX[end] (when end < the graph's size).
  Boundary exit = Boundary::Fixed;
  SparseRow exit_ram;  // Fixed: S_RAM[end] is exactly this
  SparseRow exit_aux;  // Fixed: S_AUX[end] holds at least these (it may hold more)
  std::vector<double> exit_ram_price, exit_aux_price;  // Priced: per tensor resident / on storage

  // The deadline: the window's own time (compute, and paging in strict accounting) at most
  // this. None: options.deadline_s when the window spans every stage, else no cap.
  std::optional<double> time_cap_s;
  double price_per_s = 0;  // added to the objective per second of the window's time
};

// The columns of the whole model (MilpModel(g, ...) with the default window), counted from
// the graph alone in O(edges): R, Sram, Saux, Min and Mout of every tensor i < t at stage t
// (R alone for i = t), U of every tensor <= t, and FREE of every edge (u, v) at each stage
// t >= v (an input read twice is one edge). Exact, whatever the costs and options: solve() decides from it whether CBC could
// take the model within the limit before spending the time to build it.
std::int64_t whole_model_columns(const Graph& g);

class MilpModel {
 public:
  MilpModel(const Graph& g, const GraphCosts& costs, const SolveOptions& options, std::int64_t activation_budget,
            const Window& window = {});

  int columns() const { return static_cast<int>(obj_.size()); }
  int rows() const { return static_cast<int>(rows_.size()); }
  const std::vector<double>& objective() const { return obj_; }
  const std::vector<double>& lower() const { return lower_; }
  const std::vector<double>& upper() const { return upper_; }
  const std::vector<Row>& constraint_rows() const { return rows_; }
  bool is_integer(int column) const { return integer_[static_cast<std::size_t>(column)] != 0; }
  // "R_t_i", "Sram_t_i", "Saux_t_i", "Min_t_i", "Mout_t_i", "U_t_k", "Free_t_e".
  const std::string& column_name(int column) const { return names_[static_cast<std::size_t>(column)]; }
  double objective_scale() const { return objective_scale_; }  // MILP objective x scale = J (or s)
  std::size_t begin() const { return begin_; }
  std::size_t end() const { return end_; }
  bool has_tensor(NodeId i) const { return static_cast<std::size_t>(i) < end_ && in_[static_cast<std::size_t>(i)]; }

  // Whether x meets every bound and constraint (within 1e-7), and its objective (scaled).
  bool satisfied_by(const std::vector<double>& x) const;
  double objective_value(const std::vector<double>& x) const;

  // A full assignment for a schedule (for a MIP start), with U and FREE derived from it:
  // the schedule's stages [begin, end) and its state S_RAM[end], S_AUX[end].
  std::vector<double> assignment(const Schedule& s) const;
  // The solution as a schedule of the graph's size whose stages [begin, end) and state at
  // `end` are the solution's (and the rest empty).
  Schedule schedule(const std::vector<double>& solution) const;
  // `incumbent` with its stages [begin, end) and its state at `end` replaced by the
  // solution's. With fixed boundaries taken from `incumbent` (fixed_window), the result
  // satisfies the full model when `incumbent` does, and costs the incumbent's cost minus
  // its window's plus the solution's.
  Schedule splice(const Schedule& incumbent, const std::vector<double>& solution) const;
  // Whether every entry of `s` in the window's stages (and its state at `end`) has a column.
  bool covers(const Schedule& s) const;

 private:
  // Grid entries that are not columns: a tensor without columns, or a pinned one (zero or one).
  static constexpr int kAbsent = -1, kPinnedOne = -2;
  int add_column(std::string name, double lower, double upper, double cost, bool integer);
  void add_row(Row row);
  void add_memory_rows(const std::vector<Row>& added, double budget);
  int at(const std::vector<std::vector<int>>& grid, std::size_t t, std::size_t i) const;  // kAbsent outside
  int r(std::size_t t, std::size_t i) const { return i <= t ? at(r_, t, i) : -1; }
  int s_ram(std::size_t t, std::size_t i) const { return i < t ? at(ram_, t, i) : -1; }
  int s_aux(std::size_t t, std::size_t i) const { return i < t ? at(aux_, t, i) : -1; }
  int m_in(std::size_t t, std::size_t i) const { return i < t ? at(in_m_, t, i) : -1; }
  int m_out(std::size_t t, std::size_t i) const { return i < t ? at(out_, t, i) : -1; }
  // FREE(t, e): the input of edge e is freed after its consumer is computed in stage t.
  bool frees(const Schedule& s, std::size_t t, std::size_t e) const;

  std::size_t n_, begin_, end_;
  bool windowed_;  // some stages, tensors or decisions left out or pinned
  std::vector<char> in_;                           // in_[i]: tensor i has columns
  std::vector<std::pair<NodeId, NodeId>> edges_;  // (input, consumer), each pair once
  std::vector<std::vector<std::size_t>> users_;    // users_[i]: consumers of i, ascending, unique
  // Column grids indexed [t - begin][i], stages begin..end (the last row: the state at end).
  std::vector<std::vector<int>> r_, ram_, aux_, in_m_, out_, u_, free_;
  std::vector<double> obj_, lower_, upper_;
  std::vector<char> integer_;
  std::vector<std::string> names_;
  std::vector<Row> rows_;
  double objective_scale_ = 1;
};

// The window [begin, end) of `incumbent` with both boundaries fixed to the incumbent's
// states (S_AUX[end] to what the incumbent's stage `end` and later stages need on storage),
// over the tensors the incumbent touches there, the window's nodes' inputs, and (repeated
// `recompute_depth` times) the inputs of those, so that a tensor can be recomputed instead.
Window fixed_window(const Graph& g, const Schedule& incumbent, std::size_t begin, std::size_t end,
                    int recompute_depth = 1);

// The deadline as the MILP counts it, over stages [begin, end): compute time, and in strict
// accounting paging time too.
double milp_time_s(const Schedule& s, const GraphCosts& costs, Accounting accounting, std::size_t begin,
                   std::size_t end);

}  // namespace poet::solve_internal
