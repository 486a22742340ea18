#include "gradient_rules.h"

#include <map>

namespace poet::backward {
namespace {

double elems(const Node& n) { return static_cast<double>(element_count(n.shape)); }

// FLOP models, per element of the input whose gradient is made unless said otherwise.
double per_input_1(const Node&, const Node& in) { return elems(in); }
double per_input_2(const Node&, const Node& in) { return 2 * elems(in); }
double per_input_4(const Node&, const Node& in) { return 4 * elems(in); }
double per_input_8(const Node&, const Node& in) { return 8 * elems(in); }
double per_input_15(const Node&, const Node& in) { return 15 * elems(in); }
double no_flops(const Node&, const Node&) { return 0; }
// A GEMM-shaped gradient costs what the forward GEMM costs (dX = dY W^T, dW = X^T dY).
double like_forward(const Node& f, const Node&) { return f.flops; }
// Scale and shift gradients of a norm: a multiply-add and an add per element.
double norm_params(const Node& f, const Node&) { return 3 * elems(f); }

Needs none() { return {}; }
Needs output() { return {.output = true}; }
Needs same_input() { return {.same_input = true}; }
Needs inputs() { return {.all_inputs = true}; }
Needs input_and_stats() { return {.same_input = true, .stats = true}; }
Needs inputs_and_stats() { return {.all_inputs = true, .stats = true}; }

const std::map<OpKind, GradientRule>& rules() {
  static const std::map<OpKind, GradientRule> table{
      // op                      flows  input needs         param needs        slots  input FLOPs   param FLOPs
      {OpKind::Linear, {false, none(), inputs(), -1, like_forward, like_forward}},
      {OpKind::Conv2d, {false, none(), inputs(), -1, like_forward, like_forward}},
      // Norms read x and the statistics, never their own output; no gradient flows into
      // the statistics node (slot 1): the rule's dX already accounts for it.
      {OpKind::BatchNorm2d, {false, input_and_stats(), inputs_and_stats(), 1, per_input_8, norm_params}},
      {OpKind::LayerNorm, {false, input_and_stats(), inputs_and_stats(), 1, per_input_8, norm_params}},
      {OpKind::ReLU, {false, output(), none(), -1, per_input_1, no_flops}},
      {OpKind::ReLU6, {false, output(), none(), -1, per_input_2, no_flops}},
      {OpKind::Tanh, {false, output(), none(), -1, per_input_2, no_flops}},
      {OpKind::Sigmoid, {false, output(), none(), -1, per_input_2, no_flops}},
      {OpKind::GELU, {false, same_input(), none(), -1, per_input_15, no_flops}},
      {OpKind::MaxPool2d, {false, same_input(), none(), -1, per_input_2, no_flops}},
      {OpKind::AvgPool2d, {false, none(), none(), -1, per_input_1, no_flops}},
      {OpKind::GlobalAvgPool, {false, none(), none(), -1, per_input_1, no_flops}},
      {OpKind::Add, {true, none(), none(), -1, no_flops, no_flops}},
      {OpKind::Flatten, {false, none(), none(), -1, per_input_1, no_flops}},
      {OpKind::SplitHeads, {false, none(), none(), -1, per_input_1, no_flops}},
      {OpKind::MergeHeads, {false, none(), none(), -1, per_input_1, no_flops}},
      // The mask is regenerated from the counter-based RNG (seed, step, node), not stored.
      {OpKind::Dropout, {false, none(), none(), -1, per_input_2, no_flops}},
      {OpKind::MatMul, {false, {.other_inputs = true}, none(), -1, like_forward, no_flops}},
      {OpKind::Softmax, {false, output(), none(), -1, per_input_4, no_flops}},
      // Token ids are not differentiable; the table's gradient reads them.
      {OpKind::Embedding, {false, none(), inputs(), 0, no_flops, per_input_2}},
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

}  // namespace poet::backward
