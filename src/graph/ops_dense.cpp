// GEMM operators: linear layers, batched matmul, and the embedding lookup.
#include <fmt/format.h>

#include "op_defs.h"

namespace poet::ops {
namespace {

// Linear, x [rows, in] -> y [rows, out]: dX = dY W^T is 2 x rows x in x out; dW = X^T dY
// is the same plus the bias gradient, a sum of dY over the rows (rows x out).
double linear_input_grad(const Node& f, const Node& in) {
  return 2 * elements(in.shape) * static_cast<double>(f.shape.back());
}
double linear_param_grad(const Node& f, const Node& in) {
  return linear_input_grad(f, in) + (f.attrs.bias ? elements(f.shape) : 0.0);
}

}  // namespace

OpDef linear() {
  return {
      .op = OpKind::Linear,
      .name = "linear",
      .reference_class = "LinearLayer",
      .shape = [](const OpArgs& a) {
        require(a.input().size() >= 2, "linear", "needs a [rows..., features] input");
        Shape out = a.input();
        out.back() = a.features;
        return out;
      },
      // The reference counts one row whatever the batch: 2 x params + out. Faithful graphs
      // count every row: 2 x in x out multiply-adds and the bias add, per row.
      .flops = [](const OpArgs& a, const Shape&) {
        const std::int64_t in_features = a.input().back(), out = a.features;
        if (a.reference) return 2.0 * static_cast<double>((in_features + 1) * out) + static_cast<double>(out);
        const double rows = elements(a.input()) / static_cast<double>(in_features);
        return rows * (2.0 * static_cast<double>(in_features * out) + static_cast<double>(out));
      },
      .params = [](const OpArgs& a, const Shape&) { return (a.input().back() + (a.attrs.bias ? 1 : 0)) * a.features; },
      // The weights are fixed memory, so dX reads only dY; dW reads the layer input x.
      .gradient = GradientRule{.input = {}, .params = {.all_inputs = true}, .input_flops = linear_input_grad,
                               .param_flops = linear_param_grad},
  };
}

OpDef matmul() {
  return {
      .op = OpKind::MatMul,
      .name = "matmul",
      .shape = [](const OpArgs& a) {
        const Shape &sa = a.input(0), &sb = a.input(1);
        require(sa.size() >= 2 && sa.size() == sb.size(), "matmul", "needs operands of one rank, at least 2");
        const std::int64_t k = sa.back();
        const std::int64_t kb = a.attrs.transpose_b ? sb.back() : sb[sb.size() - 2];
        require(k == kb, "matmul", fmt::format("inner dimensions {} and {} differ", k, kb));
        Shape out = sa;
        out.back() = a.attrs.transpose_b ? sb[sb.size() - 2] : sb.back();
        return out;
      },
      .flops = [](const OpArgs& a, const Shape& out) {
        const Shape& sa = a.input(0);
        const std::int64_t m = sa[sa.size() - 2], k = sa.back(), n = out.back();
        const double batch = elements(sa) / static_cast<double>(m * k);
        return 2.0 * batch * m * n * k;
      },
      .params = no_params,
      .gradient = elementwise_gradient({.other_inputs = true}, grad_like_forward),
  };
}

OpDef embedding() {
  return {
      .op = OpKind::Embedding,
      .name = "embedding",
      .shape = [](const OpArgs& a) {  // token ids [...] -> [..., features]
        Shape out = a.input();
        out.push_back(a.features);
        return out;
      },
      .flops = [](const OpArgs&, const Shape& out) { return elements(out); },  // a copy of one row per token
      .params = [](const OpArgs& a, const Shape&) { return a.vocabulary * a.features; },
      // Token ids are not differentiable; the table's gradient reads them, and is a
      // scatter-add of dY's rows, one add per output element.
      .gradient = GradientRule{.params = {.all_inputs = true},
                               .differentiable_slots = 0,
                               .input_flops = grad_no_flops,
                               .param_flops = [](const Node& f, const Node&) { return elements(f.shape); }},
  };
}

}  // namespace poet::ops
