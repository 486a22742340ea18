#include "milp_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "poet/graph/op_table.h"
#include "poet/util/error.h"

namespace poet::solve_internal {

std::int64_t whole_model_columns(const Graph& g) {
  const auto n = static_cast<std::int64_t>(g.size());
  // Per stage t: R of t + 1 tensors, four more of t tensors, U of t + 1: 6t + 2 in all.
  std::int64_t columns = 3 * n * (n - 1) + 2 * n;
  for (NodeId v = 0; v < static_cast<NodeId>(n); ++v) {
    std::vector<NodeId> inputs = g.node(v).inputs;  // an input read twice is one edge
    std::sort(inputs.begin(), inputs.end());
    const auto edges = std::unique(inputs.begin(), inputs.end()) - inputs.begin();
    columns += edges * (n - v);  // FREE of each edge into v
  }
  return columns;
}

int MilpModel::add_column(std::string name, double lower, double upper, double cost, bool integer) {
  names_.push_back(std::move(name));
  lower_.push_back(lower);
  upper_.push_back(upper);
  obj_.push_back(cost);
  integer_.push_back(integer ? 1 : 0);
  return static_cast<int>(obj_.size()) - 1;
}

// A term whose column is absent (a tensor outside the window's) is zero; one whose column
// is pinned at one (kPinnedOne) moves to the bounds.
void MilpModel::add_row(Row row) {
  std::size_t kept = 0;
  double constant = 0;
  for (std::size_t k = 0; k < row.columns.size(); ++k)
    if (row.columns[k] >= 0) {
      row.columns[kept] = row.columns[k];
      row.values[kept++] = row.values[k];
    } else if (row.columns[k] == kPinnedOne) {
      constant += row.values[k];
    }
  row.columns.resize(kept);
  row.values.resize(kept);
  row.lower -= constant;
  row.upper -= constant;
  if (kept == 0) {
    if (row.lower <= 1e-9 && row.upper >= -1e-9) return;
    // Decisions pinned to an incumbent that this window's rows reject (a baseline's start
    // may count memory otherwise): the window holds no schedule, which the empty row keeps
    // saying (satisfied_by is false, CBC finds it infeasible), and the search skips it.
    POET_CHECK(windowed_, "the whole model has no constraint without columns");
  }
  rows_.push_back(std::move(row));
}

// A stage's memory rows without U: the running sum of what its steps add, at most the
// budget. Pinned terms are constants, absent ones nothing (as in add_row); steps whose sums
// have the same columns differ only in their constants, so each run of them is one row,
// with the largest.
void MilpModel::add_memory_rows(const std::vector<Row>& added, double budget) {
  Row sum{{}, {}, -INFINITY, budget};
  double constant = 0, largest = -INFINITY;
  const auto flush = [&] {
    if (largest == -INFINITY) return;
    Row row = sum;
    row.upper = budget - largest;
    add_row(std::move(row));
    largest = -INFINITY;
  };
  for (const Row& step : added) {
    for (std::size_t k = 0; k < step.columns.size(); ++k) {
      const int column = step.columns[k];
      if (column == kPinnedOne) {
        constant += step.values[k];
      } else if (column >= 0) {
        flush();  // the sum's columns change: the steps before are one row
        const auto at = std::find(sum.columns.begin(), sum.columns.end(), column);
        if (at == sum.columns.end()) {
          sum.columns.push_back(column);
          sum.values.push_back(step.values[k]);
        } else {
          sum.values[static_cast<std::size_t>(at - sum.columns.begin())] += step.values[k];
        }
      }
    }
    largest = std::max(largest, constant);
  }
  flush();
}

int MilpModel::at(const std::vector<std::vector<int>>& grid, std::size_t t, std::size_t i) const {
  if (t < begin_ || t - begin_ >= grid.size() || i >= grid[t - begin_].size()) return -1;
  return grid[t - begin_][i];
}

MilpModel::MilpModel(const Graph& g, const GraphCosts& costs, const SolveOptions& o, std::int64_t activation_budget,
                     const Window& w)
    : n_(g.size()), begin_(w.begin), end_(w.end.value_or(g.size())),
      windowed_(begin_ > 0 || end_ < n_ || w.tensors || w.free_tensors), users_(g.size()) {
  POET_CHECK(begin_ < end_ && end_ <= n_, "a window's stages lie within the graph");
  const bool strict = o.accounting == Accounting::Strict;
  // An input read twice (x * x) is one edge: freeing it once releases it once.
  for (NodeId v = 0; v < static_cast<NodeId>(n_); ++v)
    for (NodeId in : g.node(v).inputs) {
      auto& u = users_[static_cast<std::size_t>(in)];
      if (!u.empty() && u.back() == static_cast<std::size_t>(v)) continue;
      u.push_back(static_cast<std::size_t>(v));
      edges_.emplace_back(in, v);
    }
  // Per node, the edge from the input it may be computed over in place (the simulator's
  // rule: it takes the input's bytes exactly when FREE releases that input after it). The
  // reference's model computes nothing in place.
  constexpr std::size_t kNoEdge = static_cast<std::size_t>(-1);
  std::vector<std::size_t> in_place_edge(n_, kNoEdge);
  for (std::size_t e = 0; e < edges_.size() && strict; ++e) {
    const auto [i, k] = edges_[e];
    if (in_place_input(g, k) == i) in_place_edge[static_cast<std::size_t>(k)] = e;
  }
  const bool whole = begin_ == 0 && end_ == n_;
  // A window that pins most tensors to an incumbent writes each step's memory as a sum of
  // its few free columns and a constant, without U: else every step of every stage adds a
  // U column and a row (a tensor window over resnet50's 562 stages: 166,000 columns, of
  // which CBC solved none in the time a window gets).
  const bool memory_without_u = w.free_tensors.has_value();
  const bool entry_fixed = w.entry == Window::Boundary::Fixed, exit_fixed = w.exit == Window::Boundary::Fixed;

  // The tensors with columns.
  in_.assign(end_, w.tensors ? 0 : 1);
  const auto include = [&](NodeId i) {
    POET_CHECK(i >= 0 && static_cast<std::size_t>(i) < end_, "a window's tensor precedes its end");
    in_[static_cast<std::size_t>(i)] = 1;
  };
  if (w.tensors) {
    for (NodeId i : *w.tensors) include(i);
    for (std::size_t t = begin_; t < end_; ++t) {
      include(static_cast<NodeId>(t));
      for (NodeId i : g.node(static_cast<NodeId>(t)).inputs) include(i);
    }
  }
  if (entry_fixed)
    for (const SparseRow* row : {&w.entry_ram, &w.entry_aux})
      for (NodeId i : *row) {
        POET_CHECK(static_cast<std::size_t>(i) < begin_, "a window's entry state holds tensors before it");
        include(i);
      }
  if (exit_fixed && end_ < n_)
    for (const SparseRow* row : {&w.exit_ram, &w.exit_aux})
      for (NodeId i : *row) include(i);
  const auto member = [](const SparseRow& row, std::size_t i) {
    return std::binary_search(row.begin(), row.end(), static_cast<NodeId>(i));
  };
  std::vector<char> free_tensor(end_, w.free_tensors ? 0 : 1);
  if (w.free_tensors) {
    POET_CHECK(w.pinned_to != nullptr && w.pinned_to->stages == n_, "pinned tensors have a schedule to keep");
    for (NodeId i : *w.free_tensors)
      if (static_cast<std::size_t>(i) < end_) free_tensor[static_cast<std::size_t>(i)] = 1;
  }

  const auto pinned = [](const SparseMatrix& m, std::size_t t, std::size_t i) {
    return m.get(t, static_cast<NodeId>(i)) ? kPinnedOne : kAbsent;
  };
  // FREE(t, e) when every term it depends on is pinned (or absent): its value, else none.
  const auto pinned_free = [&](std::size_t t, std::size_t e) -> std::optional<bool> {
    if (!w.free_tensors) return std::nullopt;
    const auto i = static_cast<std::size_t>(edges_[e].first), k = static_cast<std::size_t>(edges_[e].second);
    // R[t][t] is one; a pinned tensor's entries are the pinned schedule's.
    const auto fixed = [&](std::size_t node) { return !in_[node] || !free_tensor[node] || node == t; };
    if (!fixed(k) || !fixed(i)) return std::nullopt;
    for (const std::size_t j : users_[i])
      if (j > k && j <= t && !fixed(j)) return std::nullopt;
    return frees(*w.pinned_to, t, e);
  };
  const auto price = [](const std::vector<double>& prices, std::size_t i) { return i < prices.size() ? prices[i] : 0.0; };

  // Scales: memory in units of the largest tensor, energy and time in units of one
  // compute-once pass, so that no coefficient is far from 1.
  double max_bytes = 1;
  for (const auto& c : costs.nodes) max_bytes = std::max(max_bytes, static_cast<double>(c.bytes));
  const auto mem = [&](std::size_t i) { return static_cast<double>(costs.nodes[i].bytes) / max_bytes; };
  const bool energy = o.objective == SolveObjective::Energy;
  objective_scale_ = energy ? std::max(costs.total_compute_energy_j, 1e-30) : std::max(costs.total_compute_time_s, 1e-30);
  const auto cost = [&](double value) { return value / objective_scale_; };
  const bool remat = o.mode != SolveMode::PagingOnly;
  const bool paging = o.mode != SolveMode::RematOnly;
  // The time each column adds to the deadline's count, also priced per second.
  const auto compute_s = [&](std::size_t i) { return costs.nodes[i].compute_time_s; };
  const auto pagein_s = [&](std::size_t i) { return strict ? pagein_step_time_s(costs.nodes[i]) : 0.0; };
  const auto pageout_s = [&](std::size_t i) { return strict ? pageout_step_time_s(costs.nodes[i]) : 0.0; };
  const double per_s = w.price_per_s;

  const std::size_t span = end_ - begin_;
  const auto grid = [&](std::vector<std::vector<int>>& m, std::size_t stages) {
    m.assign(stages, std::vector<int>(end_, -1));
  };
  const std::size_t state_stages = span + (end_ < n_ ? 1 : 0);  // S_RAM and S_AUX also at `end`
  grid(r_, span), grid(ram_, state_stages), grid(aux_, state_stages), grid(in_m_, span), grid(out_, span),
      grid(u_, span);
  free_.assign(span, std::vector<int>(edges_.size(), -1));
  for (std::size_t t = begin_; t < end_; ++t) {
    const std::size_t s = t - begin_;
    for (std::size_t i = 0; i <= t; ++i) {
      if (!in_[i]) continue;
      const NodeCost& c = costs.nodes[i];
      const double compute = energy ? c.compute_energy_j : c.compute_time_s;
      if (i != t && !free_tensor[i]) {  // pinned: constants, not columns (nor costs, nor prices)
        const Schedule& p = *w.pinned_to;
        r_[s][i] = pinned(p.R, t, i), ram_[s][i] = pinned(p.S_ram, t, i), aux_[s][i] = pinned(p.S_aux, t, i),
        in_m_[s][i] = pinned(p.M_in, t, i), out_[s][i] = pinned(p.M_out, t, i);
        continue;
      }
      r_[s][i] = add_column(fmt::format("R_{}_{}", t, i), i == t ? 1 : 0, i == t || remat ? 1 : 0,
                            cost(compute + per_s * compute_s(i)), true);
      if (i == t) continue;
      if (t == begin_ && entry_fixed) {
        const double ram = member(w.entry_ram, i) ? 1 : 0, aux = member(w.entry_aux, i) ? 1 : 0;
        ram_[s][i] = add_column(fmt::format("Sram_{}_{}", t, i), ram, ram, 0, true);
        aux_[s][i] = add_column(fmt::format("Saux_{}_{}", t, i), aux, aux, 0, true);
      } else {
        const bool priced = t == begin_;
        ram_[s][i] = add_column(fmt::format("Sram_{}_{}", t, i), 0, 1, priced ? cost(price(w.entry_ram_price, i)) : 0, true);
        aux_[s][i] = add_column(fmt::format("Saux_{}_{}", t, i), 0, paging ? 1 : 0,
                                priced ? cost(price(w.entry_aux_price, i)) : 0, true);
      }
      in_m_[s][i] = add_column(fmt::format("Min_{}_{}", t, i), 0, paging ? 1 : 0,
                               cost((energy ? c.pagein_energy_j : 0) + per_s * pagein_s(i)), true);
      out_[s][i] = add_column(fmt::format("Mout_{}_{}", t, i), 0, paging ? 1 : 0,
                              cost((energy ? c.pageout_energy_j : 0) + per_s * pageout_s(i)), true);
    }
    for (std::size_t k = 0; k <= t && !memory_without_u; ++k)
      if (in_[k])
        u_[s][k] = add_column(fmt::format("U_{}_{}", t, k), 0, static_cast<double>(activation_budget) / max_bytes, 0, false);
    for (std::size_t e = 0; e < edges_.size(); ++e) {
      const auto i = static_cast<std::size_t>(edges_[e].first), k = static_cast<std::size_t>(edges_[e].second);
      if (k > t || !in_[i] || !in_[k]) continue;
      if (const auto known = pinned_free(t, e)) {
        free_[s][e] = *known ? kPinnedOne : kAbsent;
        continue;
      }
      free_[s][e] = add_column(fmt::format("Free_{}_{}", t, e), 0, 1, 0, true);
    }
  }
  if (end_ < n_) {  // the state after the window
    for (std::size_t i = 0; i < end_; ++i) {
      if (!in_[i]) continue;
      if (!free_tensor[i]) {
        ram_[span][i] = pinned(w.pinned_to->S_ram, end_, i), aux_[span][i] = pinned(w.pinned_to->S_aux, end_, i);
        continue;
      }
      if (exit_fixed) {
        const double ram = member(w.exit_ram, i) ? 1 : 0, aux = member(w.exit_aux, i) ? 1 : 0;
        ram_[span][i] = add_column(fmt::format("Sram_{}_{}", end_, i), ram, ram, 0, true);
        aux_[span][i] = add_column(fmt::format("Saux_{}_{}", end_, i), aux, paging ? 1 : aux, 0, true);
      } else {
        ram_[span][i] = add_column(fmt::format("Sram_{}_{}", end_, i), 0, 1, cost(price(w.exit_ram_price, i)), true);
        aux_[span][i] = add_column(fmt::format("Saux_{}_{}", end_, i), 0, paging ? 1 : 0,
                                   cost(price(w.exit_aux_price, i)), true);
      }
    }
  }

  for (std::size_t t = begin_; t < end_; ++t) {
    const std::size_t s = t - begin_;
    // Inputs resident: R[t][v] <= R[t][u] + S_RAM[t][u] (+ M_in[t][u] in strict accounting).
    // Algorithm 2 pages a tensor in before the stage's computations, and strict accounting
    // holds the page-in's buffer from the start of its stage (the memory rows below), so
    // the stage's nodes may read it. The paper's rows (and reference accounting, which does
    // not count page-in buffers) make it wait for the next stage: one stage longer in RAM.
    for (const auto& [u, v] : edges_) {
      if (static_cast<std::size_t>(v) > t || !in_[static_cast<std::size_t>(v)]) continue;
      Row inputs{{r(t, v), r(t, u), s_ram(t, u)}, {1, -1, -1}, -INFINITY, 0};
      if (strict) {
        inputs.columns.push_back(m_in(t, u));
        inputs.values.push_back(-1);
      }
      add_row(std::move(inputs));
    }
    for (std::size_t i = 0; i <= t && t + 1 < n_; ++i) {
      if (!in_[i]) continue;
      // In RAM at the next stage only if kept, computed or paged in during this one.
      Row keep{{s_ram(t + 1, i), r(t, i)}, {1, -1}, -INFINITY, 0};
      // On storage at the next stage only if it was, or was paged out during this one.
      Row store{{s_aux(t + 1, i)}, {1}, -INFINITY, 0};
      if (i < t) {
        keep.columns.insert(keep.columns.end(), {s_ram(t, i), m_in(t, i)});
        keep.values.insert(keep.values.end(), {-1, -1});
        store.columns.insert(store.columns.end(), {s_aux(t, i), m_out(t, i)});
        store.values.insert(store.values.end(), {-1, -1});
      }
      add_row(std::move(keep));
      add_row(std::move(store));
    }
    for (std::size_t i = 0; i < t; ++i) {
      if (!in_[i]) continue;
      add_row({{m_in(t, i), s_aux(t, i)}, {1, -1}, -INFINITY, 0});   // page in only from storage
      add_row({{m_out(t, i), s_ram(t, i)}, {1, -1}, -INFINITY, 0});  // page out only from RAM
    }

    // Memory: the first U of the stage holds what is resident at the stage's start plus the
    // first tensor if computed; each next tensor adds its output and releases the inputs
    // FREE says are done. Tensors without columns are neither resident nor computed. A
    // tensor computed in place over an input FREE releases after it takes that input's
    // bytes: the input is released at the tensor's own step, not after it.
    std::vector<std::size_t> chain;
    for (std::size_t k = 0; k <= t; ++k)
      if (in_[k]) chain.push_back(k);
    const auto release_in_place = [&](Row& row, std::size_t k) {
      const std::size_t e = in_place_edge[k];
      if (e == kNoEdge || free_[s][e] == kAbsent) return;
      row.columns.push_back(free_[s][e]);
      row.values.push_back(-mem(static_cast<std::size_t>(edges_[e].first)));
    };
    // What each step adds to the memory in use (a release adds minus the bytes): the first
    // step also what is resident at the stage's start.
    std::vector<Row> added(chain.size());
    added[0] = {{r(t, chain[0])}, {mem(chain[0])}, 0, 0};
    release_in_place(added[0], chain[0]);
    for (std::size_t i = 0; i < t; ++i) {
      if (!in_[i]) continue;
      added[0].columns.push_back(s_ram(t, i));
      added[0].values.push_back(mem(i));
      if (strict) {  // a page-in holds its buffer from the start of its stage
        added[0].columns.push_back(m_in(t, i));
        added[0].values.push_back(mem(i));
      }
    }
    for (std::size_t j = 0; j + 1 < chain.size(); ++j) {
      const std::size_t k = chain[j], next = chain[j + 1];
      Row& step = added[j + 1];
      step = {{r(t, next)}, {mem(next)}, 0, 0};
      for (std::size_t e = 0; e < edges_.size(); ++e)
        if (static_cast<std::size_t>(edges_[e].second) == k && free_[s][e] != kAbsent && e != in_place_edge[k]) {
          step.columns.push_back(free_[s][e]);
          step.values.push_back(-mem(static_cast<std::size_t>(edges_[e].first)));
        }
      release_in_place(step, next);
    }
    if (memory_without_u) {
      add_memory_rows(added, static_cast<double>(activation_budget) / max_bytes);
    } else {  // U[first] = added[0]; U[next] = U[previous] + added[next]
      for (std::size_t j = 0; j < chain.size(); ++j) {
        Row& row = added[j];
        for (double& v : row.values) v = -v;
        row.columns.insert(row.columns.begin(), u_[s][chain[j]]);
        row.values.insert(row.values.begin(), 1);
        if (j > 0) {
          row.columns.insert(row.columns.begin() + 1, u_[s][chain[j - 1]]);
          row.values.insert(row.values.begin() + 1, -1);
        }
        add_row(std::move(row));
      }
    }
    // FREE[t][e] = 1 exactly when the consumer k runs in stage t, the input i is not kept
    // into the next stage, and no later consumer of i runs in stage t.
    for (std::size_t e = 0; e < edges_.size(); ++e) {
      if (free_[s][e] < 0) continue;
      const auto i = static_cast<std::size_t>(edges_[e].first), k = static_cast<std::size_t>(edges_[e].second);
      std::vector<int> hazards{r(t, k)};
      std::vector<double> signs{1};
      if (t + 1 < n_) {
        hazards.push_back(s_ram(t + 1, i));
        signs.push_back(-1);
      }
      for (const std::size_t j : users_[i])
        if (j > k && j <= t && in_[j]) {
          hazards.push_back(r(t, j));
          signs.push_back(-1);
        }
      const double max_hazards = static_cast<double>(hazards.size());
      // 1 - FREE <= hazards(t,i,k) = 1 - R[t][k] + S_RAM[t+1][i] + sum R[t][j].
      Row low{hazards, signs, -INFINITY, 0};
      low.columns.push_back(free_[s][e]);
      low.values.push_back(-1);
      // max x (1 - FREE) >= hazards.
      Row high{hazards, signs, 1 - max_hazards, INFINITY};
      high.columns.push_back(free_[s][e]);
      high.values.push_back(-max_hazards);
      add_row(std::move(low));
      add_row(std::move(high));
    }
  }

  const std::optional<double> cap = w.time_cap_s ? w.time_cap_s : whole ? o.deadline_s : std::nullopt;
  if (cap) {
    Row deadline{{}, {}, -INFINITY, *cap / costs.total_compute_time_s};
    for (std::size_t t = begin_; t < end_; ++t)
      for (std::size_t i = 0; i <= t; ++i) {
        if (!in_[i]) continue;
        deadline.columns.push_back(r(t, i));
        deadline.values.push_back(compute_s(i) / costs.total_compute_time_s);
        if (strict && i < t) {
          deadline.columns.insert(deadline.columns.end(), {m_in(t, i), m_out(t, i)});
          deadline.values.insert(deadline.values.end(),
                                 {pagein_s(i) / costs.total_compute_time_s, pageout_s(i) / costs.total_compute_time_s});
        }
      }
    add_row(std::move(deadline));
  }
}

bool MilpModel::satisfied_by(const std::vector<double>& x) const {
  constexpr double kTolerance = 1e-7;
  for (std::size_t c = 0; c < obj_.size(); ++c)
    if (x[c] < lower_[c] - kTolerance || x[c] > upper_[c] + kTolerance) return false;
  for (const auto& row : rows_) {
    double value = 0;
    for (std::size_t k = 0; k < row.columns.size(); ++k) value += row.values[k] * x[static_cast<std::size_t>(row.columns[k])];
    if (value < row.lower - kTolerance || value > row.upper + kTolerance) return false;
  }
  return true;
}

double MilpModel::objective_value(const std::vector<double>& x) const {
  double value = 0;
  for (std::size_t c = 0; c < obj_.size(); ++c) value += obj_[c] * x[c];
  return value;
}

bool MilpModel::frees(const Schedule& s, std::size_t t, std::size_t e) const {
  const auto i = static_cast<std::size_t>(edges_[e].first), k = static_cast<std::size_t>(edges_[e].second);
  if (!s.R.get(t, static_cast<NodeId>(k))) return false;
  if (t + 1 < n_ && s.S_ram.get(t + 1, static_cast<NodeId>(i))) return false;
  for (const std::size_t j : users_[i])
    if (j > k && j <= t && s.R.get(t, static_cast<NodeId>(j))) return false;
  return true;
}

std::vector<double> MilpModel::assignment(const Schedule& s) const {
  std::vector<double> x(obj_.size(), 0.0);
  const auto set = [&](int column, bool value) {
    if (column >= 0) x[static_cast<std::size_t>(column)] = value ? 1 : 0;
  };
  for (std::size_t t = begin_; t < end_; ++t) {
    for (std::size_t i = 0; i <= t; ++i) {
      const auto v = static_cast<NodeId>(i);
      set(r(t, i), s.R.get(t, v));
      set(s_ram(t, i), s.S_ram.get(t, v));
      set(s_aux(t, i), s.S_aux.get(t, v));
      set(m_in(t, i), s.M_in.get(t, v));
      set(m_out(t, i), s.M_out.get(t, v));
    }
    for (std::size_t e = 0; e < edges_.size(); ++e) {
      const int column = free_[t - begin_][e];
      set(column, column >= 0 && frees(s, t, e));
    }
  }
  for (std::size_t i = 0; i < end_ && end_ < n_; ++i) {
    set(s_ram(end_, i), s.S_ram.get(end_, static_cast<NodeId>(i)));
    set(s_aux(end_, i), s.S_aux.get(end_, static_cast<NodeId>(i)));
  }
  // U follows from the rows that define it.
  for (const Row& row : rows_) {
    if (row.lower != row.upper || row.values.empty() || row.values[0] != 1) continue;
    const int target = row.columns[0];
    if (integer_[static_cast<std::size_t>(target)]) continue;
    double value = row.lower;
    for (std::size_t k = 1; k < row.columns.size(); ++k) value -= row.values[k] * x[static_cast<std::size_t>(row.columns[k])];
    x[static_cast<std::size_t>(target)] = value;
  }
  return x;
}

Schedule MilpModel::schedule(const std::vector<double>& x) const {
  Schedule s(n_, "poet");
  const auto on = [&](int column) {
    return column == kPinnedOne || (column >= 0 && x[static_cast<std::size_t>(column)] > 0.5);
  };
  for (std::size_t t = begin_; t <= end_ && t < n_; ++t)
    for (std::size_t i = 0; i <= t && i < end_; ++i) {
      const auto v = static_cast<NodeId>(i);
      if (on(r(t, i))) s.R.set(t, v);
      if (on(s_ram(t, i))) s.S_ram.set(t, v);
      if (on(s_aux(t, i))) s.S_aux.set(t, v);
      if (on(m_in(t, i))) s.M_in.set(t, v);
      if (on(m_out(t, i))) s.M_out.set(t, v);
    }
  return s;
}

Schedule MilpModel::splice(const Schedule& incumbent, const std::vector<double>& x) const {
  POET_CHECK(incumbent.stages == n_, "a window is spliced into a schedule of its graph");
  Schedule out = incumbent;
  const Schedule part = schedule(x);
  const auto replace = [](SparseMatrix& into, const SparseMatrix& from, std::size_t t) {
    const SparseRow old = into.row(t);
    for (NodeId i : old) into.set(t, i, false);
    for (NodeId i : from.row(t)) into.set(t, i);
  };
  for (std::size_t t = begin_; t < end_; ++t)
    for (auto m : {&Schedule::R, &Schedule::S_ram, &Schedule::S_aux, &Schedule::M_in, &Schedule::M_out})
      replace(out.*m, part.*m, t);
  if (end_ < n_) {
    replace(out.S_ram, part.S_ram, end_);
    replace(out.S_aux, part.S_aux, end_);
  }
  return out;
}

bool MilpModel::covers(const Schedule& s) const {
  const auto covered = [&](const SparseMatrix& m, std::size_t t) {
    return std::all_of(m.row(t).begin(), m.row(t).end(), [&](NodeId i) { return has_tensor(i); });
  };
  for (std::size_t t = begin_; t < end_; ++t)
    for (const SparseMatrix* m : {&s.R, &s.S_ram, &s.S_aux, &s.M_in, &s.M_out})
      if (!covered(*m, t)) return false;
  return end_ == n_ || (covered(s.S_ram, end_) && covered(s.S_aux, end_));
}

Window fixed_window(const Graph& g, const Schedule& incumbent, std::size_t begin, std::size_t end, int recompute_depth) {
  const std::size_t n = g.size();
  POET_CHECK(begin < end && end <= n && incumbent.stages == n, "a window's stages lie within the schedule's");
  Window w;
  w.begin = begin;
  w.end = end;
  w.entry_ram = incumbent.S_ram.row(begin);
  w.entry_aux = incumbent.S_aux.row(begin);
  if (end < n) {
    w.exit_ram = incumbent.S_ram.row(end);
    // S_AUX[end] appears in stage end's rows only as the source of a page-in, and of what
    // is still on storage at end + 1 without a page-out during stage end.
    for (NodeId i = 0; i < static_cast<NodeId>(end); ++i)
      if (incumbent.M_in.get(end, i) ||
          (end + 1 < n && incumbent.S_aux.get(end + 1, i) && !incumbent.M_out.get(end, i)))
        w.exit_aux.push_back(i);
  }
  std::vector<char> in(end, 0);
  const auto add_row = [&](const SparseMatrix& m, std::size_t t) {
    for (NodeId i : m.row(t))
      if (static_cast<std::size_t>(i) < end) in[static_cast<std::size_t>(i)] = 1;
  };
  for (std::size_t t = begin; t < end; ++t) {
    for (const SparseMatrix* m : {&incumbent.R, &incumbent.S_ram, &incumbent.S_aux, &incumbent.M_in, &incumbent.M_out})
      add_row(*m, t);
    for (NodeId i : g.node(static_cast<NodeId>(t)).inputs) in[static_cast<std::size_t>(i)] = 1;
  }
  if (end < n) add_row(incumbent.S_ram, end), add_row(incumbent.S_aux, end);
  for (int depth = 0; depth < recompute_depth; ++depth) {
    const std::vector<char> before = in;
    for (std::size_t i = 0; i < begin; ++i)
      if (before[i])
        for (NodeId j : g.node(static_cast<NodeId>(i)).inputs) in[static_cast<std::size_t>(j)] = 1;
  }
  w.tensors.emplace();
  for (std::size_t i = 0; i < end; ++i)
    if (in[i]) w.tensors->push_back(static_cast<NodeId>(i));
  return w;
}

double milp_time_s(const Schedule& s, const GraphCosts& costs, Accounting accounting, std::size_t begin,
                   std::size_t end) {
  double total = 0;
  for (std::size_t t = begin; t < end; ++t) {
    for (NodeId i : s.R.row(t)) total += costs.nodes[static_cast<std::size_t>(i)].compute_time_s;
    if (accounting != Accounting::Strict) continue;
    for (NodeId i : s.M_in.row(t)) total += pagein_step_time_s(costs.nodes[static_cast<std::size_t>(i)]);
    for (NodeId i : s.M_out.row(t)) total += pageout_step_time_s(costs.nodes[static_cast<std::size_t>(i)]);
  }
  return total;
}

}  // namespace poet::solve_internal
