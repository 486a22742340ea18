// The per-operator gradient rules of the `autodiff` backward: which forward tensors each
// gradient reads, and what it costs. One table, keyed by operator; an operator without an
// entry cannot be differentiated, and saying so is an error, never a guess.
#pragma once

#include <optional>
#include <string>

#include "poet/graph/graph.h"

namespace poet::backward {

// What a gradient computation reads besides the incoming gradient dY.
struct Needs {
  bool output = false;        // the forward node's own output (ReLU, softmax, loss probabilities)
  bool same_input = false;    // the input whose gradient is taken (GELU, max-pool)
  bool other_inputs = false;  // the other operands (matmul)
  bool all_inputs = false;    // every input (the weight gradient of linear and conv: x)
  bool stats = false;         // the saved normalization statistics (batch / layer norm)
};

struct GradientRule {
  // For the gradient of an input: a flow-through op passes dY on unchanged (add), so no
  // node is made for it and dY itself is the contribution.
  bool flows_through = false;
  Needs input;                  // for the gradient of each differentiable input
  Needs params;                 // for the parameter gradient (ops with parameters)
  int differentiable_slots = -1;  // -1: every input slot; otherwise only slots below this
  // FLOPs of one input gradient and of the parameter gradient, from the forward node and
  // the input's shape.
  double (*input_flops)(const Node& forward, const Node& input) = nullptr;
  double (*param_flops)(const Node& forward, const Node& input) = nullptr;
};

// The rule for an operator, or nothing if it has none.
std::optional<GradientRule> gradient_rule(OpKind op);

// "linear, conv2d, ...": the operators that have a rule, in OpKind order, for messages.
std::string ops_with_rules();

}  // namespace poet::backward
