#include "gradient_rules.h"

#include <map>

namespace poet::backward {
namespace {

double elems(const Node& n) { return static_cast<double>(element_count(n.shape)); }

// FLOP models. `in` is the input whose gradient is made (for a parameter gradient, input 0).
// Element-wise gradients: a few FLOPs per element of the input.
double per_input_1(const Node&, const Node& in) { return elems(in); }
double per_input_2(const Node&, const Node& in) { return 2 * elems(in); }
double per_input_4(const Node&, const Node& in) { return 4 * elems(in); }
double per_input_8(const Node&, const Node& in) { return 8 * elems(in); }
double per_input_15(const Node&, const Node& in) { return 15 * elems(in); }
double no_flops(const Node&, const Node&) { return 0; }
// Linear, x [rows, in] -> y [rows, out]: dX = dY W^T is 2 x rows x in x out; dW = X^T dY
// is the same plus the bias gradient, a sum of dY over the rows (rows x out).
double linear_input(const Node& f, const Node& in) { return 2 * elems(in) * static_cast<double>(f.shape.back()); }
double linear_params(const Node& f, const Node& in) {
  return linear_input(f, in) + (f.attrs.bias ? elems(f) : 0.0);
}
// Convolution and matmul: each gradient is a GEMM the size of the forward one (dX is the
// transposed convolution, dW the correlation of X with dY; dA = dC B^T, dB = A^T dC).
double like_forward(const Node& f, const Node&) { return f.flops; }
// Scale and shift gradients of a norm: a multiply-add and an add per element.
double norm_params(const Node& f, const Node&) { return 3 * elems(f); }
// Embedding table gradient: a scatter-add of dY's rows, one add per output element.
double per_output_1(const Node& f, const Node&) { return elems(f); }

Needs none() { return {}; }
Needs output() { return {.output = true}; }
Needs same_input() { return {.same_input = true}; }
Needs other_inputs() { return {.other_inputs = true}; }
Needs inputs() { return {.all_inputs = true}; }
Needs input_and_stats() { return {.same_input = true, .stats = true}; }
Needs inputs_and_stats() { return {.all_inputs = true, .stats = true}; }

const std::map<OpKind, GradientRule>& rules() {
  static const std::map<OpKind, GradientRule> table{
      // op                  {flows, input needs, param needs, slots, input FLOPs, param FLOPs}
      // The weights are fixed memory, so dX reads only dY; dW reads the layer input x.
      {OpKind::Linear, {false, none(), inputs(), -1, linear_input, linear_params}},
      {OpKind::Conv2d, {false, none(), inputs(), -1, like_forward, like_forward}},
      // Norms read x and the statistics, never their own output; no gradient flows into
      // the statistics node (slot 1): the rule's dX already accounts for it.
      {OpKind::BatchNorm2d, {false, input_and_stats(), inputs_and_stats(), 1, per_input_8, norm_params}},
      {OpKind::LayerNorm, {false, input_and_stats(), inputs_and_stats(), 1, per_input_8, norm_params}},
      // relu' = [y > 0], relu6' = [0 < y < 6], tanh' = 1 - y^2, sigmoid' = y (1 - y): the output.
      {OpKind::ReLU, {false, output(), none(), -1, per_input_1, no_flops}},
      {OpKind::ReLU6, {false, output(), none(), -1, per_input_2, no_flops}},
      {OpKind::GELU, {false, same_input(), none(), -1, per_input_15, no_flops}},  // tanh and exp of x (the tanh form, as the kernel)
      {OpKind::Tanh, {false, output(), none(), -1, per_input_2, no_flops}},
      {OpKind::Sigmoid, {false, output(), none(), -1, per_input_2, no_flops}},
      // Max-pool routes dY to the arg-max of each window, found again from x.
      {OpKind::MaxPool2d, {false, same_input(), none(), -1, per_input_2, no_flops}},
      {OpKind::AvgPool2d, {false, none(), none(), -1, per_input_1, no_flops}},
      {OpKind::GlobalAvgPool, {false, none(), none(), -1, per_input_1, no_flops}},
      {OpKind::Add, {true, none(), none(), -1, no_flops, no_flops}},
      {OpKind::Flatten, {false, none(), none(), -1, per_input_1, no_flops}},
      // The mask is regenerated from the counter-based RNG (seed, step, node), not stored.
      {OpKind::Dropout, {false, none(), none(), -1, per_input_2, no_flops}},
      {OpKind::MatMul, {false, other_inputs(), none(), -1, like_forward, no_flops}},
      // dx = y * (dY - sum(dY * y)) over the last axis: the output.
      {OpKind::Softmax, {false, output(), none(), -1, per_input_4, no_flops}},
      // Token ids are not differentiable; the table's gradient reads them.
      {OpKind::Embedding, {false, none(), inputs(), 0, no_flops, per_output_1}},
      {OpKind::SplitHeads, {false, none(), none(), -1, per_input_1, no_flops}},
      {OpKind::MergeHeads, {false, none(), none(), -1, per_input_1, no_flops}},
      // d logits = probabilities - one-hot(labels), over the batch: reads the probabilities.
      {OpKind::SoftmaxCrossEntropy, {false, output(), none(), -1, per_input_2, no_flops}},
  };
  return table;
}

}  // namespace

std::optional<GradientRule> gradient_rule(OpKind op) {
  const auto it = rules().find(op);
  if (it == rules().end()) return std::nullopt;
  return it->second;
}

std::string ops_with_rules() {
  std::string names;
  for (const auto& [op, rule] : rules()) {
    if (!names.empty()) names += ", ";
    names += op_name(op);
  }
  return names;
}

}  // namespace poet::backward
