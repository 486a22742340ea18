// The reference implementation's fused transformer layers, kept for `chain` parity only:
// their sizes come from OpArgs (seq, hidden, head_dim, heads), since they have no
// attributes, and their formulas are the reference's. They have no gradient rule and no
// kernels.
#include "op_defs.h"

namespace poet::ops {
namespace {

// Weights and biases of the fused linear + ReLU.
std::int64_t linear_relu_params(const OpArgs& a, const Shape&) { return (a.input().back() + 1) * a.features; }

}  // namespace

OpDef ref_query_key_value() {
  return {.op = OpKind::RefQueryKeyValue,
          .name = "ref_query_key_value",
          .reference_class = "QueryKeyValueMatrix",
          .shape = [](const OpArgs& a) { return Shape{3 * a.seq, a.head_dim, a.heads}; },
          .flops = [](const OpArgs& a, const Shape&) { return 3.0 * a.seq * a.hidden * a.head_dim * a.heads; },
          .params = [](const OpArgs& a, const Shape&) { return 3 * a.hidden * a.head_dim * a.heads; }};
}

OpDef ref_qkt() {
  return {.op = OpKind::RefQKT,
          .name = "ref_qkt",
          .reference_class = "QKTMatrix",
          .shape = [](const OpArgs& a) { return Shape{a.seq, a.seq, a.heads}; },
          // Q K^T, then the mask and the dropout, one FLOP per score each.
          .flops = [](const OpArgs& a, const Shape& out) {
            return static_cast<double>(a.seq) * a.head_dim * a.seq * a.heads + 2.0 * elements(out);
          },
          .params = no_params};
}

OpDef ref_qktv() {
  return {.op = OpKind::RefQKTV,
          .name = "ref_qktv",
          .reference_class = "QKTVMatrix",
          .shape = [](const OpArgs& a) { return Shape{a.seq, a.head_dim * a.heads}; },
          // Scores x V, then the concatenation of the heads.
          .flops = [](const OpArgs& a, const Shape&) { return 2.0 * a.seq * a.seq * a.head_dim * a.heads; },
          .params = no_params};
}

OpDef ref_linear_relu() {
  return {.op = OpKind::RefLinearReLU,
          .name = "ref_linear_relu",
          .reference_class = "LinearLayerReLU",
          .shape = [](const OpArgs& a) {
            require(!a.input().empty(), "ref_linear_relu", "needs a [rows, features] input");
            return Shape{a.input()[0], a.features};
          },
          .flops = [](const OpArgs& a, const Shape& out) {
            const auto params = static_cast<double>(linear_relu_params(a, out));
            return 2.0 * params + static_cast<double>(a.features) + elements(out);
          },
          .params = linear_relu_params};
}

}  // namespace poet::ops
