// The POET MILP over a training graph: variables for the lower-triangular entries of R,
// S_RAM, S_AUX, M_in, M_out, Checkmate's memory variables U and FREE, and the constraints of
// the paper's Algorithm 1. Coefficients are scaled (bytes by the largest tensor, joules and
// seconds by the graph's totals) so the matrix is well conditioned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "poet/schedule/schedule.h"
#include "poet/solve/solve.h"

namespace poet::milp {

struct Row {
  std::vector<int> columns;
  std::vector<double> values;
  double lower, upper;
};

class MilpModel {
 public:
  MilpModel(const Graph& g, const GraphCosts& costs, const SolveOptions& options, std::int64_t activation_budget);

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

  // A full assignment for a schedule (for a MIP start), with U and FREE derived from it.
  std::vector<double> assignment(const Schedule& s) const;
  Schedule schedule(const std::vector<double>& solution) const;

 private:
  int add_column(std::string name, double lower, double upper, double cost, bool integer);
  void add_row(Row row) { rows_.push_back(std::move(row)); }
  int r(std::size_t t, std::size_t i) const { return r_[t][i]; }
  int s_ram(std::size_t t, std::size_t i) const { return i < t ? ram_[t][i] : -1; }
  int s_aux(std::size_t t, std::size_t i) const { return i < t ? aux_[t][i] : -1; }
  int m_in(std::size_t t, std::size_t i) const { return i < t ? in_[t][i] : -1; }
  int m_out(std::size_t t, std::size_t i) const { return i < t ? out_[t][i] : -1; }
  // FREE(t, e): the input of edge e is freed after its consumer is computed in stage t.
  bool frees(const Schedule& s, std::size_t t, std::size_t e) const;

  const Graph& g_;
  std::size_t n_;
  std::vector<std::pair<NodeId, NodeId>> edges_;  // (input, consumer), repeats kept as in the graph
  std::vector<std::vector<std::size_t>> users_;    // users_[i]: consumers of i, ascending, unique
  std::vector<std::vector<int>> r_, ram_, aux_, in_, out_, u_, free_;
  std::vector<double> obj_, lower_, upper_;
  std::vector<char> integer_;
  std::vector<std::string> names_;
  std::vector<Row> rows_;
  double objective_scale_ = 1;
};

}  // namespace poet::milp
