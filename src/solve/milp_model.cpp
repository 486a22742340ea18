#include "milp_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "poet/util/error.h"

namespace poet::milp {

int MilpModel::add_column(std::string name, double lower, double upper, double cost, bool integer) {
  names_.push_back(std::move(name));
  lower_.push_back(lower);
  upper_.push_back(upper);
  obj_.push_back(cost);
  integer_.push_back(integer ? 1 : 0);
  return static_cast<int>(obj_.size()) - 1;
}

MilpModel::MilpModel(const Graph& g, const GraphCosts& costs, const SolveOptions& o, std::int64_t activation_budget)
    : g_(g), n_(g.size()), users_(g.size()) {
  const bool strict = o.accounting == Accounting::Strict;
  for (NodeId v = 0; v < static_cast<NodeId>(n_); ++v)
    for (NodeId in : g.node(v).inputs) {
      edges_.emplace_back(in, v);
      auto& u = users_[static_cast<std::size_t>(in)];
      if (u.empty() || u.back() != static_cast<std::size_t>(v)) u.push_back(static_cast<std::size_t>(v));
    }

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

  const auto grid = [&](std::vector<std::vector<int>>& m) { m.assign(n_, std::vector<int>(n_, -1)); };
  grid(r_), grid(ram_), grid(aux_), grid(in_), grid(out_), grid(u_);
  free_.assign(n_, std::vector<int>(edges_.size(), -1));
  for (std::size_t t = 0; t < n_; ++t) {
    for (std::size_t i = 0; i <= t; ++i) {
      const NodeCost& c = costs.nodes[i];
      const double compute = energy ? c.compute_energy_j : c.compute_time_s;
      r_[t][i] = add_column(fmt::format("R_{}_{}", t, i), i == t ? 1 : 0, i == t || remat ? 1 : 0, cost(compute), true);
      if (i == t) continue;
      ram_[t][i] = add_column(fmt::format("Sram_{}_{}", t, i), 0, 1, 0, true);
      aux_[t][i] = add_column(fmt::format("Saux_{}_{}", t, i), 0, paging ? 1 : 0, 0, true);
      in_[t][i] = add_column(fmt::format("Min_{}_{}", t, i), 0, paging ? 1 : 0, energy ? cost(c.pagein_energy_j) : 0, true);
      out_[t][i] = add_column(fmt::format("Mout_{}_{}", t, i), 0, paging ? 1 : 0, energy ? cost(c.pageout_energy_j) : 0, true);
    }
    for (std::size_t k = 0; k <= t; ++k)
      u_[t][k] = add_column(fmt::format("U_{}_{}", t, k), 0, static_cast<double>(activation_budget) / max_bytes, 0, false);
    for (std::size_t e = 0; e < edges_.size(); ++e)
      if (static_cast<std::size_t>(edges_[e].second) <= t) free_[t][e] = add_column(fmt::format("Free_{}_{}", t, e), 0, 1, 0, true);
  }

  for (std::size_t t = 0; t < n_; ++t) {
    // Inputs resident: R[t][v] <= R[t][u] + S_RAM[t][u].
    for (const auto& [u, v] : edges_) {
      if (static_cast<std::size_t>(v) > t) continue;
      add_row({{r(t, v), r(t, u), s_ram(t, u)}, {1, -1, -1}, -INFINITY, 0});
    }
    for (std::size_t i = 0; i <= t && t + 1 < n_; ++i) {
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
      add_row({{m_in(t, i), s_aux(t, i)}, {1, -1}, -INFINITY, 0});   // page in only from storage
      add_row({{m_out(t, i), s_ram(t, i)}, {1, -1}, -INFINITY, 0});  // page out only from RAM
    }

    // Memory: U[t][0] holds what is resident at the stage's start plus node 0 if computed;
    // each next node adds its output and releases the inputs FREE says are done.
    Row start{{u_[t][0], r(t, 0)}, {1, -mem(0)}, 0, 0};
    for (std::size_t i = 0; i < t; ++i) {
      start.columns.push_back(s_ram(t, i));
      start.values.push_back(-mem(i));
      if (strict) {  // a page-in holds its buffer from the start of its stage
        start.columns.push_back(m_in(t, i));
        start.values.push_back(-mem(i));
      }
    }
    add_row(std::move(start));
    for (std::size_t k = 0; k < t; ++k) {
      Row step{{u_[t][k + 1], u_[t][k], r(t, k + 1)}, {1, -1, -mem(k + 1)}, 0, 0};
      for (std::size_t e = 0; e < edges_.size(); ++e)
        if (static_cast<std::size_t>(edges_[e].second) == k) {
          step.columns.push_back(free_[t][e]);
          step.values.push_back(mem(static_cast<std::size_t>(edges_[e].first)));
        }
      add_row(std::move(step));
    }
    // FREE[t][e] = 1 exactly when the consumer k runs in stage t, the input i is not kept
    // into the next stage, and no later consumer of i runs in stage t.
    for (std::size_t e = 0; e < edges_.size(); ++e) {
      const auto i = static_cast<std::size_t>(edges_[e].first), k = static_cast<std::size_t>(edges_[e].second);
      if (k > t) continue;
      std::vector<int> hazards{r(t, k)};
      std::vector<double> signs{1};
      if (t + 1 < n_) {
        hazards.push_back(s_ram(t + 1, i));
        signs.push_back(-1);
      }
      for (const std::size_t j : users_[i])
        if (j > k && j <= t) {
          hazards.push_back(r(t, j));
          signs.push_back(-1);
        }
      const double max_hazards = static_cast<double>(hazards.size());
      // 1 - FREE <= hazards(t,i,k) = 1 - R[t][k] + S_RAM[t+1][i] + sum R[t][j].
      Row low{hazards, signs, -INFINITY, 0};
      low.columns.push_back(free_[t][e]);
      low.values.push_back(-1);
      // max x (1 - FREE) >= hazards.
      Row high{hazards, signs, 1 - max_hazards, INFINITY};
      high.columns.push_back(free_[t][e]);
      high.values.push_back(-max_hazards);
      add_row(std::move(low));
      add_row(std::move(high));
    }
  }

  if (o.deadline_s) {
    Row deadline{{}, {}, -INFINITY, *o.deadline_s / costs.total_compute_time_s};
    for (std::size_t t = 0; t < n_; ++t)
      for (std::size_t i = 0; i <= t; ++i) {
        deadline.columns.push_back(r(t, i));
        deadline.values.push_back(costs.nodes[i].compute_time_s / costs.total_compute_time_s);
        if (strict && i < t) {
          deadline.columns.insert(deadline.columns.end(), {m_in(t, i), m_out(t, i)});
          deadline.values.insert(deadline.values.end(), {costs.nodes[i].pagein_time_s / costs.total_compute_time_s,
                                                         costs.nodes[i].pageout_time_s / costs.total_compute_time_s});
        }
      }
    add_row(std::move(deadline));
  }
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
  for (std::size_t t = 0; t < n_; ++t) {
    for (std::size_t i = 0; i <= t; ++i) {
      const auto v = static_cast<NodeId>(i);
      set(r(t, i), s.R.get(t, v));
      set(s_ram(t, i), s.S_ram.get(t, v));
      set(s_aux(t, i), s.S_aux.get(t, v));
      set(m_in(t, i), s.M_in.get(t, v));
      set(m_out(t, i), s.M_out.get(t, v));
    }
    for (std::size_t e = 0; e < edges_.size(); ++e) set(free_[t][e], free_[t][e] >= 0 && frees(s, t, e));
  }
  // U follows from the rows that define it.
  for (const Row& row : rows_) {
    if (row.lower != 0 || row.upper != 0 || row.values.empty() || row.values[0] != 1) continue;
    const int target = row.columns[0];
    if (integer_[static_cast<std::size_t>(target)]) continue;
    double value = 0;
    for (std::size_t k = 1; k < row.columns.size(); ++k) value -= row.values[k] * x[static_cast<std::size_t>(row.columns[k])];
    x[static_cast<std::size_t>(target)] = value;
  }
  return x;
}

Schedule MilpModel::schedule(const std::vector<double>& x) const {
  Schedule s(n_, "poet");
  const auto on = [&](int column) { return column >= 0 && x[static_cast<std::size_t>(column)] > 0.5; };
  for (std::size_t t = 0; t < n_; ++t)
    for (std::size_t i = 0; i <= t; ++i) {
      const auto v = static_cast<NodeId>(i);
      if (on(r(t, i))) s.R.set(t, v);
      if (on(s_ram(t, i))) s.S_ram.set(t, v);
      if (on(s_aux(t, i))) s.S_aux.set(t, v);
      if (on(m_in(t, i))) s.M_in.set(t, v);
      if (on(m_out(t, i))) s.M_out.set(t, v);
    }
  return s;
}

}  // namespace poet::milp
