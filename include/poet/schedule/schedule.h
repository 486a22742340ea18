// A schedule: the paper's decision matrices over stages, stored sparsely.
//
// Stage semantics (Checkmate's): in stage t the nodes i with R[t][i] = 1 are evaluated in
// topological order, node t last. S_RAM[t][i]: i is in RAM at the start of stage t.
// S_AUX[t][i]: i is on secondary storage at the start of stage t. M_in[t][i]: i is paged
// in during stage t, before the stage's computations (Algorithm 2), and resident from stage
// t + 1 if kept. M_out[t][i]: i is paged out during stage t.
// All matrices are lower-triangular: nothing happens to node i before stage i.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "poet/graph/graph.h"

namespace poet {

// One row of a sparse 0/1 matrix: the set columns, ascending.
using SparseRow = std::vector<NodeId>;

class SparseMatrix {
 public:
  SparseMatrix() = default;
  explicit SparseMatrix(std::size_t stages) : rows_(stages) {}
  std::size_t stages() const { return rows_.size(); }
  bool get(std::size_t t, NodeId i) const;
  void set(std::size_t t, NodeId i, bool value = true) {
    auto& r = rows_.at(t);
    // Schedules are mostly written in ascending node order: an append needs no search, and
    // inline it is a plain push (Capuchin's layouts make tens of millions).
    if (value && (r.empty() || r.back() < i))
      r.push_back(i);
    else
      set_in_place(r, i, value);
  }
  // Room for `entries` in row t, for a caller that knows how many it will set.
  void reserve(std::size_t t, std::size_t entries) { rows_.at(t).reserve(entries); }
  // Empties every row and keeps its storage, for a caller that rebuilds the matrix.
  void clear() {
    for (SparseRow& r : rows_) r.clear();
  }
  const SparseRow& row(std::size_t t) const { return rows_.at(t); }
  std::size_t count() const;  // set entries
  bool operator==(const SparseMatrix&) const = default;

 private:
  static void set_in_place(SparseRow& r, NodeId i, bool value);  // by search: insert or erase
  std::vector<SparseRow> rows_;
};

struct Schedule {
  std::string method;  // who produced it ("checkpoint_all", "poet", ...)
  std::size_t stages = 0;
  SparseMatrix R, S_ram, S_aux, M_in, M_out;

  explicit Schedule(std::size_t n = 0, std::string producer = "")
      : method(std::move(producer)), stages(n), R(n), S_ram(n), S_aux(n), M_in(n), M_out(n) {}
  bool operator==(const Schedule&) const = default;
};

// Structural checks against the graph: size, lower-triangularity, R[t][t] = 1.
// Throws InputError naming the matrix, stage and node.
void check_schedule_shape(const Schedule& s, const Graph& g);

nlohmann::json schedule_to_json(const Schedule& s);
Schedule schedule_from_json(const nlohmann::json& j, std::string_view origin);
// Reads a schedule for `g`: refused before its rows are built unless it has one stage per
// node of `g` and, when the file names its graph's structure, the structure of `g`; then
// held to check_schedule_shape. Errors name the file.
Schedule load_schedule(const std::string& path, const Graph& g);
// A schedule file's text: schedule_to_json with the graph it is for ("graph": its name and
// structure_checksum), which load_schedule checks.
std::string schedule_file_text(const Schedule& s, const Graph& g);

}  // namespace poet
