// Element-wise operators, softmax over the last axis, and the loss.
#include <fmt/format.h>

#include "op_defs.h"

namespace poet::ops {
namespace {

// The FLOPs of an element-wise op: `PerElement` per element of the output.
template <int PerElement>
double per_element(const OpArgs&, const Shape& out) {
  return PerElement * elements(out);
}

// y, of x's rank, with each axis equal to x's or 1: what mul repeats over x.
void require_broadcast(std::string_view op, const Shape& y, const Shape& x) {
  bool fits = x.size() == y.size();
  for (std::size_t d = 0; fits && d < x.size(); ++d) fits = y[d] == x[d] || y[d] == 1;
  require(fits, op,
          fmt::format("{} does not broadcast over {} (same rank, each axis equal or 1)", shape_string(y),
                      shape_string(x)));
}

// An op whose output has its input's shape, costs `forward` and differentiates by `rule`.
OpDef unary(OpKind op, std::string_view name, std::string_view reference_class,
            double (*forward)(const OpArgs&, const Shape&), GradientRule rule) {
  return parameterless(op, name, reference_class, same_shape, forward, rule);
}

// The output of an operator of two operands, the second broadcast over the first.
Shape broadcast_operands(const OpArgs& a, std::string_view op) {
  require(a.inputs.size() == 2, op, "needs two inputs");
  require_broadcast(op, a.input(1), a.input(0));
  return a.input(0);
}

// An operator whose kernel computes y[k] from x[k] (and the other inputs at k) alone.
OpDef in_place(OpDef d) {
  d.in_place = true;
  return d;
}

}  // namespace

// relu' = [y > 0] and relu6' = [0 < y < 6] take one bit per element, which the backward
// keeps (relu_mask) instead of the output; tanh' = 1 - y^2, sigmoid' = y (1 - y): the output.
OpDef relu() {
  OpDef d = unary(OpKind::ReLU, "relu", "ReLULayer", per_element<1>,
                  in_place_gradient({.saved = true}, grad_per_input_1));
  d.saved = SavedForBackward{.op = OpKind::ReLUMask, .reads_output = true};
  return in_place(d);
}
OpDef relu6() {
  OpDef d = unary(OpKind::ReLU6, "relu6", "", per_element<2>, in_place_gradient({.saved = true}, grad_per_input_2));
  d.saved = SavedForBackward{.op = OpKind::ReLUMask, .reads_output = true};
  return in_place(d);
}
// The bits of a ReLU's or ReLU6's output (the op of the node it reads says which), 8 to a
// byte, element i in bit i % 8 of byte i / 8: its shape counts the bytes. A compare per
// element. Its rules see the output it masks.
OpDef relu_mask() {
  OpDef d = parameterless(
      OpKind::ReLUMask, "relu_mask", "",
      [](const OpArgs& a) { return Shape{(element_count(a.input()) + 7) / 8}; },
      [](const OpArgs& a, const Shape&) { return elements(a.input()); }, std::nullopt);
  d.element_bytes = [](const OpAttrs&) { return 1; };
  return d;
}
// The tanh approximation: about 10 FLOP per element; its gradient takes the tanh and exp
// of x again (the tanh form, as the kernel).
OpDef gelu() {
  return in_place(unary(OpKind::GELU, "gelu", "", per_element<10>,
                        in_place_gradient({.same_input = true}, grad_per_input_15)));
}
// An exp, an add and a divide or two: about 4 FLOP per element.
OpDef tanh() {
  return in_place(unary(OpKind::Tanh, "tanh", "TanHLayer", per_element<4>,
                        in_place_gradient({.output = true}, grad_per_input_2)));
}
OpDef sigmoid() {
  return in_place(unary(OpKind::Sigmoid, "sigmoid", "SigmoidLayer", per_element<4>,
                        in_place_gradient({.output = true}, grad_per_input_2)));
}
// The mask is regenerated from the counter-based RNG (seed, step, node), not stored.
OpDef dropout() {
  return in_place(
      unary(OpKind::Dropout, "dropout", "DropoutLayer", per_element<1>, in_place_gradient({}, grad_per_input_2)));
}
// Max, subtract, exp, sum, divide: about 5 FLOP per element. dx = y * (dY - sum(dY * y))
// over the last axis: the gradient reads the output.
OpDef softmax() {
  return unary(OpKind::Softmax, "softmax", "", per_element<5>,
               elementwise_gradient({.output = true}, grad_per_input_4));
}

OpDef add() {
  return {.op = OpKind::Add,
          .name = "add",
          .reference_class = "SkipAddLayer",
          // The reference adds tensors of different sizes in resnet50 (zero-padding the
          // smaller, its section 3.3); the output has the first one's shape. Otherwise the
          // shapes must be equal.
          .shape = [](const OpArgs& a) {
            require(a.inputs.size() == 2, "add", "needs two inputs");
            require(a.reference || a.input(0) == a.input(1), "add",
                    fmt::format("shapes {} and {} differ", shape_string(a.input(0)), shape_string(a.input(1))));
            return a.input(0);
          },
          .flops = per_element<1>,
          .params = no_params,
          .gradient = GradientRule{.flows_through = true, .input_flops = grad_no_flops, .param_flops = grad_no_flops},
          .in_place = true};
}

// y = c x + s: a multiply (and an add) per element, and dx = c dY reads nothing else.
OpDef scale() {
  return in_place(unary(OpKind::Scale, "scale", "", per_element<1>, in_place_gradient({}, grad_per_input_1)));
}
// The exact GELU, x Phi(x): an erf and a few FLOP; its gradient Phi(x) + x phi(x) reads x.
OpDef gelu_erf() {
  return in_place(unary(OpKind::GELUErf, "gelu_erf", "", per_element<10>,
                        in_place_gradient({.same_input = true}, grad_per_input_15)));
}

// x + p, p's `features` elements repeated over x's leading axes (a position embedding
// [seq, dim] added to every sample). dX is dY (it flows through); dp sums dY over the
// repeats. y[k] = x[k] + p[j] reads x at k alone: computable in place.
OpDef add_parameter() {
  return {.op = OpKind::AddParameter,
          .name = "add_parameter",
          .shape = [](const OpArgs& a) {
            const Shape& x = a.input();
            std::int64_t suffix = 1;
            for (std::size_t d = x.size(); d-- > 0 && suffix < a.features;) suffix *= x[d];
            require(a.features > 0 && suffix == a.features, "add_parameter",
                    fmt::format("{} learned values are not the trailing axes of {}", a.features, shape_string(x)));
            return x;
          },
          .flops = per_element<1>,
          .params = [](const OpArgs& a, const Shape&) { return a.features; },
          .gradient = GradientRule{.flows_through = true, .input_flops = grad_no_flops,
                                   .param_flops = [](const Node& f, const Node&) { return elements(f.shape); }},
          .in_place = true};
}

// A multiply-add and a clamp; the gradient is 1/6 where 0 < y < 1: it reads the output.
OpDef hard_sigmoid() {
  return in_place(unary(OpKind::HardSigmoid, "hard_sigmoid", "", per_element<3>,
                        in_place_gradient({.output = true}, grad_per_input_2)));
}
// x's shape, once attrs.scale is positive: leaky ReLU's negative slope, ELU's alpha. y then
// has x's sign, so their gradients read the output and compute in place.
template <OpKind Op>
Shape positive_scale_shape(const OpArgs& a) {
  constexpr std::string_view op = Op == OpKind::ELU ? "elu" : "leaky_relu";
  constexpr std::string_view what = Op == OpKind::ELU ? "alpha" : "negative slope";
  require(a.attrs.scale > 0, op, fmt::format("its {} (attrs.scale) is {}, and must be positive", what, a.attrs.scale));
  return a.input();
}
// x, or the negative slope times x; the gradient is 1 or the slope.
OpDef leaky_relu() {
  OpDef d = in_place(unary(OpKind::LeakyReLU, "leaky_relu", "", per_element<1>,
                           in_place_gradient({.output = true}, grad_per_input_1)));
  d.shape = positive_scale_shape<OpKind::LeakyReLU>;
  return d;
}
// x, or alpha (e^x - 1); the gradient is 1, or y + alpha = alpha e^x.
OpDef elu() {
  OpDef d = in_place(unary(OpKind::ELU, "elu", "", per_element<4>,
                           in_place_gradient({.output = true}, grad_per_input_2)));
  d.shape = positive_scale_shape<OpKind::ELU>;
  return d;
}
// ln(1 + e^x); its gradient, the logistic sigmoid of x, reads x.
OpDef softplus() {
  return in_place(unary(OpKind::Softplus, "softplus", "", per_element<4>,
                        in_place_gradient({.same_input = true}, grad_per_input_4)));
}
// x hard_sigmoid(x); its gradient (0, (2x + 3) / 6 or 1 by the piece) reads x.
OpDef hard_swish() {
  return in_place(unary(OpKind::HardSwish, "hard_swish", "", per_element<4>,
                        in_place_gradient({.same_input = true}, grad_per_input_4)));
}

// a b, b of a's rank with size 1 on the axes it is repeated over. dA = dY b reads b; dB,
// the sum of dY a over the repeats, reads a.
OpDef mul() {
  return parameterless(
      OpKind::Mul, "mul", "", [](const OpArgs& a) { return broadcast_operands(a, "mul"); },
      per_element<1>,
      elementwise_gradient({.other_inputs = true}, [](const Node& f, const Node&) { return 2 * elements(f.shape); }));
}

// a / b, b of a's rank with size 1 on the axes it is repeated over. dA = dY / b reads b;
// dB, minus the sum of dY a / b^2 over the repeats, reads a and b: each gradient reads both
// inputs (autodiff gives one rule to every slot).
OpDef div() {
  return parameterless(
      OpKind::Div, "div", "", [](const OpArgs& a) { return broadcast_operands(a, "div"); },
      per_element<1>,
      elementwise_gradient({.all_inputs = true}, [](const Node& f, const Node&) { return 3 * elements(f.shape); }));
}

// x (op) p, p a learned tensor of shape attrs.dims repeated over x where it has size 1;
// dp, a sum over the repeats of dY times x, reads x.
template <OpKind Op>
OpDef over_learned_tensor(Needs input_gradient_reads) {
  static constexpr std::string_view name = Op == OpKind::PRelu ? "prelu" : "mul_parameter";
  return {.op = Op,
          .name = name,
          .shape = [](const OpArgs& a) {
            require_broadcast(name, a.attrs.dims, a.input());
            return a.input();
          },
          .flops = per_element<1>,
          .params = [](const OpArgs& a, const Shape&) { return element_count(a.attrs.dims); },
          .gradient = GradientRule{.input = input_gradient_reads, .params = {.all_inputs = true},
                                   .input_flops = grad_per_input_1,
                                   .param_flops = [](const Node& f, const Node&) { return 2 * elements(f.shape); }}};
}

// x p (ConvNeXt's layer scale: [1, C, 1, 1] over [N, C, H, W]). dX = dY p reads the
// parameters alone.
OpDef mul_parameter() { return over_learned_tensor<OpKind::MulParameter>({}); }

// x where x > 0, else p x (torch's PReLU: [1, C, 1, 1] over [N, C, H, W], or one slope for
// all). dX = dY or p dY by the sign of x reads x; dp sums dY x where x <= 0.
OpDef prelu() { return over_learned_tensor<OpKind::PRelu>({.same_input = true}); }

// x + c with c a fixed tensor of shape attrs.dims (x's rank, size 1 where repeated), not
// learned: Swin's shifted-window attention mask, which the file computes from constants.
// Its values are the node's parameters, none trained (fixed memory, as PyTorch's buffers);
// dX = dY. y[k] = x[k] + c[j] reads x at k alone: computable in place.
OpDef add_constant() {
  return {.op = OpKind::AddConstant,
          .name = "add_constant",
          .shape = [](const OpArgs& a) {
            require_broadcast("add_constant", a.attrs.dims, a.input());
            return a.input();
          },
          .flops = per_element<1>,
          .params = [](const OpArgs& a, const Shape&) { return element_count(a.attrs.dims); },
          .untrained = [](const Node& n) { return n.param_count; },
          .gradient = GradientRule{.flows_through = true, .input_flops = grad_no_flops, .param_flops = grad_no_flops},
          .in_place = true};
}

// x + t[index]: a learned table t of `features` values gathered by a fixed index tensor of
// shape attrs.dims (x's rank, size 1 where repeated), as Swin's and MaxViT's relative
// position bias. The parameters are t (trained), then the indices (fixed memory, held as
// floats, exact below 2^24); dX = dY, and dt scatter-adds dY by the indices (reading
// neither x nor y). y[k] = x[k] + t[index[j]] reads x at k alone: computable in place.
OpDef add_gathered() {
  return {.op = OpKind::AddGathered,
          .name = "add_gathered",
          .shape = [](const OpArgs& a) {
            require_broadcast("add_gathered", a.attrs.dims, a.input());
            require(a.features > 0 && a.features < (std::int64_t{1} << 24), "add_gathered",
                    fmt::format("a table of {} values is not between 1 and 2^24", a.features));
            return a.input();
          },
          .flops = per_element<1>,
          .params = [](const OpArgs& a, const Shape&) { return a.features + element_count(a.attrs.dims); },
          .untrained = [](const Node& n) { return element_count(n.attrs.dims); },
          .gradient = GradientRule{.flows_through = true, .input_flops = grad_no_flops,
                                   .param_flops = [](const Node& f, const Node&) { return elements(f.shape); }},
          .in_place = true};
}

OpDef softmax_cross_entropy() {
  return {.op = OpKind::SoftmaxCrossEntropy,
          .name = "softmax_cross_entropy",
          .reference_class = "CrossEntropyLoss",
          // Reference: output (classes,). Otherwise the output is the class probabilities,
          // the shape of the logits.
          .shape = [](const OpArgs& a) { return a.reference ? Shape{a.features} : a.input(); },
          .flops = [](const OpArgs& a, const Shape&) { return elements(a.input()) * static_cast<double>(a.features); },
          .params = no_params,
          // d logits = probabilities - one-hot(labels), over the batch: reads the probabilities.
          .gradient = elementwise_gradient({.output = true}, grad_per_input_2)};
}

OpDef mean_squared_error() {
  return {.op = OpKind::MeanSquaredError,
          .name = "mean_squared_error",
          // The difference, one row per sample: a reconstruction of any shape against the
          // input it reconstructs, value by value in memory order (torch's MSELoss of
          // output.view(x.shape) and x).
          .shape = [](const OpArgs& a) {
            require(a.inputs.size() == 2 && element_count(a.input(0)) == element_count(a.input(1)) &&
                        !a.input(0).empty() && a.input(0)[0] > 0,
                    "mean_squared_error", "needs an output and a target of as many values, batch first");
            return Shape{a.input(0)[0], element_count(a.input(0)) / a.input(0)[0]};
          },
          .flops = [](const OpArgs& a, const Shape&) { return 3.0 * elements(a.input()); },
          .params = no_params,
          // d x = 2 (x - target) / values: reads the output; the target (the input) takes none.
          .gradient = [] {
            GradientRule rule = elementwise_gradient({.output = true}, grad_per_input_2);
            rule.differentiable_slots = 1;
            return rule;
          }()};
}

}  // namespace poet::ops
