// The chain shape revolve and POFO need, and which backward stages reverse which step.
//
// A chain here is forward nodes x_0 (the input) .. x_L (the loss) where x_k reads only
// x_{k-1}; step k computes x_k, and its reversal is the backward nodes that read x_{k-1}
// and x_k. Beside them the forward part may hold what a backward keeps of a step (a ReLU's
// mask, a max-pool's indices: op_table.h's SavedForBackward), read by backward nodes only:
// computed with its step, a backward read of it counts as a read of the tensor it keeps.
// So may a norm's statistics node, which reads x_{k-1} for the norm x_k beside it: it is
// computed once and kept for the norm's recomputations and backward.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "poet/graph/graph.h"

namespace poet {

struct ChainReversal {
  int steps = 0;                                 // L: the loss is x_L
  std::vector<NodeId> node;                      // [step]: x_step's node
  std::vector<std::vector<std::size_t>> stages;  // [step]: backward stages, ascending
  std::vector<bool> reads_output;                // [step]: some stage reads x_step
};

// The chain, or why `g` is not one (the message names `method`). A stage belongs to the
// latest step whose x_{k-1}, x_k cover its forward reads; stages reading no forward tensor
// stay with the current step.
std::variant<ChainReversal, std::string> find_chain_reversal(const Graph& g, std::string_view method);

}  // namespace poet
