// Rules several operator families share (op_defs.h).
#include <fmt/format.h>

#include "op_defs.h"
#include "poet/util/error.h"

namespace poet::ops {

double elements(const Shape& s) { return static_cast<double>(element_count(s)); }

Shape same_shape(const OpArgs& a) { return a.input(); }

std::int64_t no_params(const OpArgs&, const Shape&) { return 0; }

void require(bool ok, std::string_view op, std::string_view what) {
  if (!ok) throw InputError(fmt::format("{}: {}", op, what));
}

OpDef parameterless(OpKind op, std::string_view name, std::string_view reference_class, Shape (*shape)(const OpArgs&),
                    double (*flops)(const OpArgs&, const Shape&), std::optional<GradientRule> gradient) {
  return {.op = op,
          .name = name,
          .reference_class = reference_class,
          .shape = shape,
          .flops = flops,
          .params = no_params,
          .gradient = gradient};
}

namespace {
double input_elements(const Node& in) { return elements(in.shape); }
}  // namespace

double grad_per_input_1(const Node&, const Node& in) { return input_elements(in); }
double grad_per_input_2(const Node&, const Node& in) { return 2 * input_elements(in); }
double grad_per_input_4(const Node&, const Node& in) { return 4 * input_elements(in); }
double grad_per_input_8(const Node&, const Node& in) { return 8 * input_elements(in); }
double grad_per_input_15(const Node&, const Node& in) { return 15 * input_elements(in); }
double grad_no_flops(const Node&, const Node&) { return 0; }
double grad_like_forward(const Node& f, const Node&) { return f.flops; }

GradientRule elementwise_gradient(Needs needs, double (*flops)(const Node&, const Node&)) {
  return {.input = needs, .input_flops = flops, .param_flops = grad_no_flops};
}

GradientRule in_place_gradient(Needs needs, double (*flops)(const Node&, const Node&)) {
  GradientRule rule = elementwise_gradient(needs, flops);
  rule.in_place = true;
  return rule;
}

}  // namespace poet::ops
