// Einsum of two activations that is a batched matrix product (MaxViT's attention:
// "bghid,bghjd->bghij" and "bghij,bghjd->bghid"), lowered to poet's matmul between the
// transposes that bring the operands and the result into its layout. Other equations
// (a trace, a diagonal, a sum over an axis, an outer product, broadcasting with "...")
// stop the import naming the node.
#include <algorithm>
#include <cctype>
#include <numeric>

#include "importer.h"
#include "poet/graph/op_table.h"

namespace poet::onnx_import {
namespace {

struct Equation {
  std::string a, b, out;  // one letter an axis
};

// "B G H I D, B G H J D -> B G H I J" (torch writes spaces) as its three label strings;
// nullopt for a form other than two operands and an explicit output of letters.
std::optional<Equation> parse_equation(const std::string& text) {
  std::string s;
  for (const char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s.push_back(c);
  const auto arrow = s.find("->");
  const auto comma = s.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) return std::nullopt;
  Equation e{s.substr(0, comma), s.substr(comma + 1, arrow - comma - 1), s.substr(arrow + 2)};
  for (const std::string* labels : {&e.a, &e.b, &e.out})
    if (labels->empty() || !std::all_of(labels->begin(), labels->end(), [](char c) {
          return std::isalpha(static_cast<unsigned char>(c));
        }))
      return std::nullopt;
  return e;
}

bool has(const std::string& labels, char c) { return labels.find(c) != std::string::npos; }

bool unique_labels(const std::string& labels) {
  std::string sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}

// The permutation that takes axes labelled `from` to the order of `to` (the same letters).
std::vector<std::int64_t> permutation(const std::string& from, const std::string& to) {
  std::vector<std::int64_t> perm;
  for (const char c : to) perm.push_back(static_cast<std::int64_t>(from.find(c)));
  return perm;
}

}  // namespace

NodeId Importer::permuted(const NodeReader& n, NodeId x, const std::vector<std::int64_t>& perm) {
  if (std::is_sorted(perm.begin(), perm.end())) return x;
  OpAttrs a;
  a.dims = perm;
  return make(n, OpKind::Transpose, {x}, {.attrs = a});
}

NodeId Importer::einsum(const NodeReader& n) {
  const std::string text = n.get_string("equation", "");
  const std::optional<Equation> e = parse_equation(text);
  auto refuse = [&](const std::string& why) -> NodeId {
    unsupported(n, fmt::format("equation '{}': {}; poet imports an Einsum of two activations that is a batched "
                               "matrix product: the batch axes in both operands and the output, one axis contracted, "
                               "one free axis of each operand (as 'bhid,bhjd->bhij' or 'bhij,bhjd->bhid')",
                               text, why));
  };
  if (n.input_count() != 2 || !e) return refuse("not two operands with an explicit output ('a,b->c')");
  if (!unique_labels(e->a) || !unique_labels(e->b) || !unique_labels(e->out))
    return refuse("a label repeats within one term (a trace or a diagonal)");
  std::string batch, contracted, free_a, free_b;
  for (const char c : e->a) {
    if (has(e->b, c)) (has(e->out, c) ? batch : contracted).push_back(c);
    else if (has(e->out, c)) free_a.push_back(c);
    else return refuse(fmt::format("axis '{}' of the first operand is summed alone", c));
  }
  for (const char c : e->b)
    if (!has(e->a, c)) {
      if (!has(e->out, c)) return refuse(fmt::format("axis '{}' of the second operand is summed alone", c));
      free_b.push_back(c);
    }
  for (const char c : e->out)
    if (!has(e->a, c) && !has(e->b, c)) return refuse(fmt::format("output axis '{}' is in neither operand", c));
  if (contracted.size() != 1 || free_a.size() != 1 || free_b.size() != 1)
    return refuse(fmt::format("it contracts {} axes with {} and {} free ones", contracted.size(), free_a.size(),
                              free_b.size()));
  const NodeId x = activation_as_onnx(n, 0), y = activation_as_onnx(n, 1);
  if (g_.node(x).shape.size() != e->a.size() || g_.node(y).shape.size() != e->b.size())
    fail(n, fmt::format("equation '{}' does not fit its operands {} and {}", text, shape_string(g_.node(x).shape),
                        shape_string(g_.node(y).shape)));
  // The batch axes in the output's order, then A as [.., i, k], B as [.., k, j].
  std::string batch_order;
  for (const char c : e->out)
    if (has(batch, c)) batch_order.push_back(c);
  const std::string product = batch_order + free_a + free_b;
  const NodeId a = permuted(n, x, permutation(e->a, batch_order + free_a + contracted));
  const NodeId b = permuted(n, y, permutation(e->b, batch_order + contracted + free_b));
  const Shape &sa = g_.node(a).shape, &sb = g_.node(b).shape;
  if (!std::equal(sa.begin(), sa.end() - 2, sb.begin()))
    unsupported(n, fmt::format("equation '{}': its batch axes differ in size ({} and {}); poet's matmul does not "
                               "broadcast",
                               text, shape_string(g_.node(x).shape), shape_string(g_.node(y).shape)));
  const NodeId c = make(n, OpKind::MatMul, {a, b});
  return permuted(n, c, permutation(product, e->out));
}

}  // namespace poet::onnx_import
