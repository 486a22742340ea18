// Seeded random training graphs and paging schedules for property tests.
#pragma once

#include <algorithm>
#include <random>

#include "poet/graph/graph.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/schedule/schedule.h"

namespace poet::testing {

// How random_graph draws each node's inputs: besides the previous node, up to
// max_fan_in - 1 more; each is a long skip (to any earlier node) with skip_probability, else
// one of the 4 nodes before it; with hub_probability it is node 1 instead, so node 1 gets a
// large fan-out.
struct RandomDagShape {
  int max_fan_in = 3;
  double skip_probability = 0.3;
  double hub_probability = 0;
  std::int64_t max_elements = 1024;
  // A forward node takes its first input's size with this probability, so that it may be
  // computed over it in place (op_table.h's in_place_input: the nodes are adds).
  double in_place_probability = 0;
};

// A random DAG of n nodes (n >= 2): node 0 is the input; every other node reads 1 to
// max_fan_in earlier nodes, mostly recent ones (like real networks, with some long skips);
// node n/2 is the loss. Sizes 4 B - 4 KiB (by default), FLOPs 0 - 1e6.
inline Graph random_graph(std::mt19937& rng, int n, const RandomDagShape& shape = {}) {
  Graph g("random");
  std::uniform_int_distribution<std::int64_t> elems(1, shape.max_elements);
  std::uniform_real_distribution<double> flops(0, 1e6);
  for (int i = 0; i < n; ++i) {
    Node node;
    node.name = "n" + std::to_string(i);
    node.op = i == 0 ? OpKind::Input : OpKind::Add;
    node.role = i == n / 2 ? Role::Loss : i > n / 2 ? Role::Backward : Role::Forward;
    if (node.role == Role::Backward) node.op = OpKind::ChainGradient;
    node.shape = {elems(rng)};
    node.flops = i == 0 ? 0 : flops(rng);
    if (i > 0) {
      const int fan_in = std::uniform_int_distribution<int>(1, std::min(shape.max_fan_in, i))(rng);
      node.inputs.push_back(i - 1);
      for (int k = 1; k < fan_in; ++k) {
        NodeId input = 1;
        if (!(shape.hub_probability > 0 && i > 1 && std::bernoulli_distribution(shape.hub_probability)(rng))) {
          const bool skip = std::bernoulli_distribution(shape.skip_probability)(rng);
          const int lo = skip ? 0 : std::max(0, i - 4);
          input = std::uniform_int_distribution<int>(lo, i - 1)(rng);
        }
        // A graph lists one input at most kMaxInputRepeats times: draw no more.
        if (std::count(node.inputs.begin(), node.inputs.end(), input) < kMaxInputRepeats) node.inputs.push_back(input);
      }
      if (shape.in_place_probability > 0 && node.role == Role::Forward &&
          std::bernoulli_distribution(shape.in_place_probability)(rng))
        node.shape = g.node(node.inputs.front()).shape;
    }
    g.add(std::move(node));
  }
  return g;
}

// Checkpoint-all, except that with probability p each tensor with two consecutive uses at
// least 3 stages apart is paged out the stage after the first and paged in the stage before
// the second.
inline Schedule random_paging_schedule(std::mt19937& rng, const Graph& g, double p) {
  Schedule s = checkpoint_all_schedule(g);
  s.method = "random_paging";
  const auto users = g.users();
  for (NodeId i = 0; i < static_cast<NodeId>(g.size()); ++i) {
    if (!std::bernoulli_distribution(p)(rng)) continue;
    std::size_t previous = static_cast<std::size_t>(i);
    for (NodeId user : users[i]) {
      const auto use = static_cast<std::size_t>(user);
      if (use >= previous + 3) {
        s.M_out.set(previous + 1, i);
        s.M_in.set(use - 1, i);
        for (std::size_t t = previous + 2; t < use; ++t) s.S_ram.set(t, i, false);
        for (std::size_t t = previous + 2; t < g.size(); ++t) s.S_aux.set(t, i);
        break;
      }
      previous = use;
    }
  }
  return s;
}

}  // namespace poet::testing
