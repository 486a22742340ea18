// Why the relaxation holds every schedule that recomputes a in stage s (R[s][a] = 1; the
// MILP's rows in milp_model.cpp), and an input of a recomputed with it (R[s][x] = 1):
// R[s][s] = 1 always. A node w computed in the stage reads
// each input x resident (S_RAM or, strict, M_in: counted from the stage's start) or
// recomputed at step x < w; FREE releases x only after a consumer when no later consumer
// runs in the stage, so x counts in U[s][j] for every j with x < j <= w, and for j < x too
// unless it is recomputed at step x (then it is not yet there). With c_v = R[s][v]:
//   alive(x, j) >= c_w for a consumer w >= j, when x < j;
//   pre(x) >= c_w - c_x for every consumer w of x (counted at the steps before x);
// and a counts from its step to the end: kept into stage s + 1 when s is not its next use
// (S_RAM[s+1][a] = 1 forbids its FREE), read by s when it is. An input x that j is
// computed over in place counts at step j only if it is still there at step j + 1 (its
// FREE at j, which gives j its bytes, needs no later consumer in the stage), so alive(x,
// j + 1) stands for it there (nothing at x's last use). So U[s][j] >= the row below; the
// MILP keeps U[s][j] <= the budget.
#include "recomputation_room.h"

#include <CbcModel.hpp>
#include <OsiClpSolverInterface.hpp>

#include <algorithm>

#include "cbc_runner.h"
#include "poet/graph/op_table.h"

namespace poet::solve_internal {
namespace {

// Past this many matrix entries the check is not made (it then says "room"): the rows grow
// with the square of the stage. vgg16's checks stay under 20,000; on bert (640 stages) the
// checks of late stages would take seconds each and found nothing at 30% on m4.
constexpr std::size_t kMaxEntries = 100000;

}  // namespace

bool stage_has_room_to_recompute(const Graph& g, const GraphCosts& costs, std::size_t stage, std::size_t tensor,
                                 std::optional<std::size_t> input_too, std::int64_t activation_budget,
                                 long node_limit) {
  const std::size_t s = stage, a = tensor;
  // Only the ancestors of s and of a can be worth computing or holding.
  std::vector<char> relevant(s + 1, 0);
  std::vector<std::size_t> todo{s, a};
  relevant[s] = relevant[a] = 1;
  while (!todo.empty()) {
    const std::size_t v = todo.back();
    todo.pop_back();
    for (NodeId id : g.node(static_cast<NodeId>(v)).inputs) {
      const auto x = static_cast<std::size_t>(id);
      if (!relevant[x]) relevant[x] = 1, todo.push_back(x);
    }
  }
  // The steps checked: from the first tensor the stage must compute.
  const std::size_t from = input_too.value_or(a);
  const auto users = g.users();
  double largest = 1;
  for (std::size_t v = 0; v <= s; ++v) largest = std::max(largest, static_cast<double>(costs.nodes[v].bytes));
  const auto mem = [&](std::size_t v) { return static_cast<double>(costs.nodes[v].bytes) / largest; };

  std::vector<double> lower, upper;
  const auto add_column = [&](double low) {
    lower.push_back(low);
    upper.push_back(1);
    return static_cast<int>(lower.size()) - 1;
  };
  std::vector<int> computed(s + 1, -1), pre(s + 1, -1), alive_from(s + 1, -1);
  std::vector<std::size_t> last_use(s + 1, 0), consumers_in_stage;
  std::size_t entries = 0;
  for (std::size_t v = 0; v <= s; ++v)
    if (relevant[v]) computed[v] = add_column(v == s || v == a || v == input_too ? 1 : 0);
  const int integers = static_cast<int>(lower.size());
  for (std::size_t x = 0; x <= s; ++x) {
    if (!relevant[x]) continue;
    for (NodeId w : users[x])
      if (static_cast<std::size_t>(w) <= s && relevant[static_cast<std::size_t>(w)])
        last_use[x] = std::max(last_use[x], static_cast<std::size_t>(w));
    if (x == a) last_use[x] = s;
    if (last_use[x] == 0) continue;  // read by nothing the stage can compute
    pre[x] = add_column(0);
    // alive(x, j) for j from max(from, x + 1) to last_use[x], consecutive columns.
    const std::size_t first = std::max(from, x + 1);
    if (first <= last_use[x]) {
      alive_from[x] = static_cast<int>(lower.size());
      for (std::size_t j = first; j <= last_use[x]; ++j) add_column(x == a ? 1 : 0);
      entries += (last_use[x] - first + 1) * 3;
    }
  }
  entries += (s - from + 1) * (s + 1);
  if (entries > kMaxEntries) return true;
  const auto alive = [&](std::size_t x, std::size_t j) {
    return alive_from[x] + static_cast<int>(j - std::max(from, x + 1));
  };

  std::vector<Row> rows;
  for (std::size_t x = 0; x <= s; ++x) {
    if (pre[x] < 0) continue;
    for (NodeId wid : users[x]) {
      const auto w = static_cast<std::size_t>(wid);
      if (w > s || !relevant[w]) continue;
      rows.push_back({{pre[x], computed[w], computed[x]}, {1, -1, 1}, 0, INFINITY});  // pre >= c_w - c_x
      if (alive_from[x] >= 0 && w >= std::max(from, x + 1))
        rows.push_back({{alive(x, w), computed[w]}, {1, -1}, 0, INFINITY});  // alive(x, w) >= c_w
    }
    if (alive_from[x] >= 0)
      for (std::size_t j = std::max(from, x + 1); j < last_use[x]; ++j)
        rows.push_back({{alive(x, j), alive(x, j + 1)}, {1, -1}, 0, INFINITY});  // read later: still there
  }
  const double budget = static_cast<double>(activation_budget) / largest;
  for (std::size_t j = from; j <= s; ++j) {
    Row memory{{}, {}, -INFINITY, budget};
    // The input j may be computed over in place gives j its bytes unless it is still there
    // at step j + 1 (then FREE cannot release it at j).
    const std::optional<NodeId> over = in_place_input(g, static_cast<NodeId>(j));
    for (std::size_t x = 0; x <= s; ++x) {
      if (pre[x] < 0 && computed[x] < 0) continue;
      if (x < j && alive_from[x] >= 0 && j >= std::max(from, x + 1) && j <= last_use[x]) {
        const bool taken = over && x == static_cast<std::size_t>(*over);
        if (!taken || j < last_use[x]) {
          memory.columns.push_back(alive(x, taken ? j + 1 : j));
          memory.values.push_back(mem(x));
        }
      } else if (x >= j && pre[x] >= 0) {
        memory.columns.push_back(pre[x]);
        memory.values.push_back(mem(x));
      }
      if (x == j && computed[x] >= 0) {
        memory.columns.push_back(computed[x]);
        memory.values.push_back(mem(x));
      }
    }
    rows.push_back(std::move(memory));
  }

  OsiClpSolverInterface solver;
  load_rows(solver, rows, lower, upper, std::vector<double>(lower.size(), 0.0));
  for (int c = 0; c < integers; ++c) solver.setInteger(c);
  solver.initialSolve();
  if (solver.isProvenPrimalInfeasible()) return false;
  CbcModel cbc(solver);
  cbc.setLogLevel(0);
  cbc.messageHandler()->setLogLevel(0);
  cbc.setMaximumNodes(static_cast<int>(node_limit));
  cbc.branchAndBound();
  return !cbc.isProvenInfeasible();
}

}  // namespace poet::solve_internal
