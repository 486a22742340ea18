// A five-node training graph and a device with round numbers, so that expected figures can
// be worked out by hand in the tests.
#pragma once

#include "poet/cost/device.h"
#include "poet/graph/graph.h"

namespace poet::testing {

// n0 input (40 B) -> n1 relu (40 B, 4 FLOP) -> n2 loss (20 B, 2 FLOP)
// n3 = grad(n2, n1) (40 B, 8 FLOP); n4 = grad(n3, n0) (40 B, 8 FLOP)
inline Graph hand_graph() {
  Graph g("hand");
  const auto add = [&](const char* name, OpKind op, Role role, std::int64_t elems, double flops,
                       std::vector<NodeId> in) {
    Node n;
    n.name = name;
    n.op = op;
    n.role = role;
    n.shape = {elems};
    n.flops = flops;
    n.inputs = std::move(in);
    return g.add(std::move(n));
  };
  add("x", OpKind::Input, Role::Forward, 10, 0, {});
  add("relu", OpKind::ReLU, Role::Forward, 10, 4, {0});
  add("loss", OpKind::SoftmaxCrossEntropy, Role::Loss, 5, 2, {1});
  add("d_relu", OpKind::ChainGradient, Role::Backward, 10, 8, {2, 1});
  add("d_x", OpKind::ChainGradient, Role::Backward, 10, 8, {3, 0});
  return g;
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

}  // namespace poet::testing
