// Runs single nodes of a training graph, one at a time, on tensors of their exact shapes:
// the compute load `poet profile` runs beside its storage timings (one heavy kernel, over
// and over). The kernels are the executor's own (node_kernels.h). Node times themselves are
// taken inside training steps (profile/step_node_timer.h): here every output has memory of
// its own, which a step's arena does not give it.
#pragma once

#include <cstdint>
#include <memory>

#include "poet/graph/graph.h"

namespace poet::runtime {

class NodeRunner {
 public:
  // Checks what the Executor checks (every node has a kernel and fp32 shapes that fit it,
  // one Input node) and throws InputError naming the node otherwise. Then holds every
  // node's output at once - the checkpoint-all activation peak, plus parameters - and runs
  // the whole graph once in order on a seeded batch, so that each node's inputs hold the
  // values a real step gives them (no NaNs or denormals to skew the timings).
  explicit NodeRunner(const Graph& g, std::uint64_t seed = 0);
  ~NodeRunner();
  NodeRunner(const NodeRunner&) = delete;
  NodeRunner& operator=(const NodeRunner&) = delete;

  // Evaluates node v again on the inputs the first pass left. Every node's output is a
  // pure function of its inputs, so running one node leaves the others' inputs unchanged.
  void run(NodeId v);

  const Graph& graph() const;
  // Bytes of activations, gradients, parameters and scratch held.
  std::int64_t bytes_held() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace poet::runtime
