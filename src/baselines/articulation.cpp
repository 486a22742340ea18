#include "poet/baselines/articulation.h"

#include <algorithm>

#include "poet/baselines/forward_part.h"

namespace poet {
namespace {

bool is_source(const Graph& g, NodeId v) { return g.node(v).inputs.empty(); }

// Without the edges out of a source (the input): it is held from its stage to its last read,
// so a later read of it (an autoencoder's loss reads its target) ties no segments together,
// as segment_boundary_candidates counts no such edge as skipping over a node.
std::vector<std::vector<NodeId>> undirected_forward_adjacency(const Graph& g, std::size_t forward) {
  std::vector<std::vector<NodeId>> adjacent(forward);
  for (NodeId w = 0; w < static_cast<NodeId>(forward); ++w)
    for (NodeId u : g.node(w).inputs) {
      if (is_source(g, u) && w > u + 1) continue;
      adjacent[u].push_back(w);
      adjacent[w].push_back(u);
    }
  for (auto& list : adjacent) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return adjacent;
}

}  // namespace

std::vector<NodeId> forward_articulation_points(const Graph& g) {
  const std::size_t forward = forward_part_size(g, "articulation points");
  const auto adjacent = undirected_forward_adjacency(g, forward);
  // Tarjan's low-link, iteratively: deep networks would overflow a recursive DFS.
  constexpr int kUnseen = -1;
  std::vector<int> discovered(forward, kUnseen), low(forward, 0);
  std::vector<bool> articulation(forward, false);
  struct Frame {
    NodeId node, parent;
    std::size_t next_neighbour;
    int children;
  };
  int clock = 0;
  for (NodeId root = 0; root < static_cast<NodeId>(forward); ++root) {
    if (discovered[root] != kUnseen) continue;
    std::vector<Frame> stack{{root, -1, 0, 0}};
    discovered[root] = low[root] = clock++;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next_neighbour < adjacent[f.node].size()) {
        const NodeId next = adjacent[f.node][f.next_neighbour++];
        if (next == f.parent) continue;
        if (discovered[next] != kUnseen) {
          low[f.node] = std::min(low[f.node], discovered[next]);
        } else {
          ++f.children;
          discovered[next] = low[next] = clock++;
          stack.push_back({next, f.node, 0, 0});
        }
        continue;
      }
      const Frame done = f;
      stack.pop_back();
      if (stack.empty()) {
        if (done.children > 1) articulation[done.node] = true;
        continue;
      }
      const NodeId parent = stack.back().node;
      low[parent] = std::min(low[parent], low[done.node]);
      if (stack.back().parent != -1 && low[done.node] >= discovered[parent]) articulation[parent] = true;
    }
  }
  std::vector<NodeId> points;
  for (NodeId v = 0; v < static_cast<NodeId>(forward); ++v)
    if (articulation[v]) points.push_back(v);
  return points;
}

std::vector<NodeId> segment_boundary_candidates(const Graph& g) {
  const std::size_t forward = forward_part_size(g, "segment boundaries");
  // crossings[v] > 0: some edge u -> w with u < v < w skips over v.
  std::vector<int> crossing_delta(forward + 1, 0);
  for (NodeId w = 0; w < static_cast<NodeId>(forward); ++w)
    for (NodeId u : g.node(w).inputs)
      if (!is_source(g, u) && w > u + 1) {
        ++crossing_delta[u + 1];
        --crossing_delta[w];
      }
  std::vector<NodeId> candidates;
  int crossings = 0;
  const NodeId loss = g.loss();
  std::size_t at = 0;
  const auto points = forward_articulation_points(g);
  for (NodeId v = 0; v < static_cast<NodeId>(forward); ++v) {
    crossings += crossing_delta[v];
    const bool articulation = at < points.size() && points[at] == v;
    if (articulation) ++at;
    if (articulation && crossings == 0 && v != loss && !is_source(g, v)) candidates.push_back(v);
  }
  return candidates;
}

}  // namespace poet
