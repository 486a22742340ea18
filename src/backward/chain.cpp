// The reference implementation's backward construction, kept for like-for-like comparison.
// It walks the forward nodes as a chain from the loss back to the input: gradient node k
// reads forward nodes n-2-k and n-1-k and the previous gradient. Skip connections are
// not followed backward, and the first gradient node lists the loss twice (once as the
// adjacent activation, once as the "previous gradient"), exactly as the reference does.
#include <fmt/format.h>

#include "poet/backward/backward.h"
#include "poet/util/error.h"

namespace poet {

Graph build_chain_backward(const Graph& forward) {
  const auto n = static_cast<NodeId>(forward.size());
  if (n < 2 || forward.node(n - 1).role != Role::Loss)
    throw InputError(fmt::format(
        "graph '{}': chain backward needs a forward graph that ends with its loss node", forward.name()));
  if (forward.has_backward())
    throw InputError(fmt::format("graph '{}' already has backward nodes", forward.name()));

  Graph graph = forward;
  NodeId previous_gradient = n - 1;
  for (NodeId k = 0; k + 1 < n; ++k) {
    const Node& out = forward.node(n - 2 - k);  // the activation before `in` in the chain
    const Node& in = forward.node(n - 1 - k);
    Node grad;
    grad.name = fmt::format("d({})", in.name);
    grad.op = OpKind::ChainGradient;
    grad.role = Role::Backward;
    grad.shape = in.shape;
    grad.element_bytes = in.element_bytes;
    grad.flops = 2.0 * out.flops;
    grad.inputs = {n - 2 - k, n - 1 - k, previous_gradient};
    previous_gradient = graph.add(std::move(grad));
  }
  return graph;
}

}  // namespace poet
