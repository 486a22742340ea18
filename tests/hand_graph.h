// A five-node training graph and a device with round numbers, so that expected figures can
// be worked out by hand in the tests.
#pragma once

#include <string>
#include <vector>

#include "poet/backward/backward.h"
#include "poet/cost/device.h"
#include "poet/graph/graph.h"

namespace poet::testing {

// Appends a node of `elems` floats (4 B each) to a hand-made graph.
inline NodeId add_hand_node(Graph& g, const char* name, OpKind op, Role role, std::int64_t elems, double flops,
                            std::vector<NodeId> inputs) {
  Node n;
  n.name = name;
  n.op = op;
  n.role = role;
  n.shape = {elems};
  n.flops = flops;
  n.inputs = std::move(inputs);
  return g.add(std::move(n));
}

// n0 input (40 B) -> n1 relu (40 B, 4 FLOP) -> n2 loss (20 B, 2 FLOP)
// n3 = grad(n2, n1) (40 B, 8 FLOP); n4 = grad(n3, n0) (40 B, 8 FLOP)
inline Graph hand_graph() {
  Graph g("hand");
  add_hand_node(g, "x", OpKind::Input, Role::Forward, 10, 0, {});
  add_hand_node(g, "relu", OpKind::ReLU, Role::Forward, 10, 4, {0});
  add_hand_node(g, "loss", OpKind::SoftmaxCrossEntropy, Role::Loss, 5, 2, {1});
  add_hand_node(g, "d_relu", OpKind::ChainGradient, Role::Backward, 10, 8, {2, 1});
  add_hand_node(g, "d_x", OpKind::ChainGradient, Role::Backward, 10, 8, {3, 0});
  return g;
}

// A plan of hand_graph(): x is paged out after relu and paged in right before d_x, which
// then stalls 5 s on hand_device().
inline constexpr const char* kHandLatePageIn =
    "compute 0\ncompute 1\npageout 0\nfree 0\ncompute 2\ncompute 3\nfree 1\nfree 2\n"
    "pagein 0\ncompute 4\nfree 0\nfree 3\nfree 4\n";

// x0 (input) -> conv ... -> loss: forward node k of `elems[k]` floats and 4 FLOP (the
// input 0), then the reference's chain backward (one gradient per step, reading both ends).
// Convolutions, so that no node is computed over its input in place.
inline Graph chain_training_graph(const std::vector<std::int64_t>& elems) {
  const int n = static_cast<int>(elems.size());
  Graph g("chain" + std::to_string(n));
  for (int i = 0; i < n; ++i) {
    const std::string name = "x" + std::to_string(i);
    add_hand_node(g, name.c_str(), i == 0 ? OpKind::Input : i + 1 == n ? OpKind::SoftmaxCrossEntropy : OpKind::Conv2d,
                  i + 1 == n ? Role::Loss : Role::Forward, elems[static_cast<std::size_t>(i)], i == 0 ? 0 : 4,
                  i == 0 ? std::vector<NodeId>{} : std::vector<NodeId>{i - 1});
  }
  return build_chain_backward(g);
}

// The same with every forward node 10 floats (40 B).
inline Graph chain_training_graph(int forward_nodes) {
  return chain_training_graph(std::vector<std::int64_t>(static_cast<std::size_t>(forward_nodes), 10));
}

// 1 FLOP/s, 2 FLOP/J; page-in 1 s + 10 B/s, page-out 1 s + 20 B/s; paging draws 0.5 W.
inline DeviceProfile hand_device() {
  DeviceProfile d;
  d.name = "hand";
  d.flops_per_second = 1;
  d.flops_per_joule = 2;
  d.pagein_latency_s = 1;
  d.pagein_bytes_per_s = 10;
  d.pageout_latency_s = 1;
  d.pageout_bytes_per_s = 20;
  d.memory_power_w = 0.5;
  return d;
}

// The hand device with transfers of `latency_s` each and 1 GB/s.
inline DeviceProfile device_with_transfers(double latency_s) {
  DeviceProfile d = hand_device();
  d.pagein_latency_s = d.pageout_latency_s = latency_s;
  d.pagein_bytes_per_s = d.pageout_bytes_per_s = 1e9;
  return d;
}

}  // namespace poet::testing
