#include "constant_folding.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include "poet/util/error.h"

namespace poet::onnx_import {
namespace {

[[noreturn]] void bad(const NodeReader& n, const std::string& why) {
  throw InputError(fmt::format("node '{}' ({}): {}", n.label(), n.op_type(), why));
}

const ConstTensor& arg(const NodeReader& n, const std::vector<const ConstTensor*>& in, std::size_t i) {
  if (i >= in.size() || !in[i]) bad(n, fmt::format("input {} is missing", i));
  if (!in[i]->has_data) bad(n, fmt::format("input {} ('{}') has no data", i, in[i]->name));
  return *in[i];
}

const std::vector<std::int64_t>& ints_of(const NodeReader& n, const ConstTensor& t) {
  if (t.is_float) bad(n, "folding it needs integer inputs (a shape computation)");
  return t.ints;
}

ConstTensor int_tensor(Shape dims, std::vector<std::int64_t> values) {
  ConstTensor t;
  t.dims = std::move(dims);
  t.ints = std::move(values);
  return t;
}

std::int64_t normalized_axis(const NodeReader& n, std::int64_t axis, std::int64_t rank) {
  if (axis < -rank || axis >= rank) bad(n, fmt::format("axis {} is outside a rank-{} tensor", axis, rank));
  return axis < 0 ? axis + rank : axis;
}

// Axes from the attribute (opsets before 13) or the second input.
std::vector<std::int64_t> axes_of(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  if (auto a = n.get_ints("axes")) return *a;
  if (in.size() > 1 && in[1]) return ints_of(n, arg(n, in, 1));
  return {};
}

// A folded tensor is at most 2^24 elements: a shape computation's, a mask's or an index's,
// never an activation's.
constexpr std::int64_t kMaxFolded = std::int64_t{1} << 24;

void check_size(const NodeReader& n, const Shape& dims) {
  if (!bounded_element_count(dims) || element_count(dims) > kMaxFolded)
    bad(n, fmt::format("it makes {}, more than 2^24 elements, beyond a constant poet folds", shape_string(dims)));
}

// Input i for an operator that moves elements: it may lack data (a structure-only file's
// initializer), and then so does the result, which keeps only its dimensions.
const ConstTensor& operand(const NodeReader& n, const std::vector<const ConstTensor*>& in, std::size_t i) {
  if (i >= in.size() || !in[i]) bad(n, fmt::format("input {} is missing", i));
  return *in[i];
}

std::vector<std::int64_t> strides_of(const Shape& dims) {
  std::vector<std::int64_t> s(dims.size(), 1);
  for (std::size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

// A tensor of `dims` whose element i is element source(i) of `from` (a layout operator);
// its table provenance follows the elements.
template <typename Source>
ConstTensor moved(const NodeReader& n, const ConstTensor& from, Shape dims, Source source) {
  check_size(n, dims);
  ConstTensor t;
  t.dims = std::move(dims);
  t.is_float = from.is_float;
  t.has_data = from.has_data;
  t.table = from.table;
  t.table_elements = from.table_elements;
  const bool indexed = !from.table_index.empty();
  if (!t.has_data && !indexed) return t;
  const std::int64_t count = element_count(t.dims);
  for (std::int64_t i = 0; i < count; ++i) {
    const auto k = static_cast<std::size_t>(source(i));
    if (t.has_data && t.is_float) t.floats.push_back(from.floats[k]);
    else if (t.has_data) t.ints.push_back(from.ints[k]);
    if (indexed) t.table_index.push_back(from.table_index[k]);
  }
  return t;
}

// The multi-index of element i of a tensor of `dims`, into `index`.
void unravel(std::int64_t i, const Shape& dims, std::vector<std::int64_t>& index) {
  index.resize(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    index[d] = i % dims[d];
    i /= dims[d];
  }
}

// Gather along any axis by a constant index tensor of any shape. Of a float initializer
// (a learned table), the result remembers which of the table's elements it holds.
ConstTensor gather(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const ConstTensor& data = operand(n, in, 0);
  const ConstTensor& idx = operand(n, in, 1);
  if (idx.is_float) bad(n, "its indices must be integers");
  const auto rank = static_cast<std::int64_t>(data.dims.size());
  if (rank == 0) bad(n, "it gathers from a scalar");
  const auto axis = static_cast<std::size_t>(normalized_axis(n, n.get_int("axis", 0), rank));
  const std::int64_t size = data.dims[axis];
  Shape dims(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis));
  dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
  dims.insert(dims.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.dims.end());
  std::vector<std::int64_t> ids = idx.has_data ? idx.ints : std::vector<std::int64_t>{};
  for (std::int64_t& i : ids) {
    if (i < -size || i >= size) bad(n, fmt::format("index {} is outside [0, {})", i, size));
    if (i < 0) i += size;
  }
  ConstTensor from = data;
  if (data.is_float && !data.name.empty() && data.table.empty()) {  // a learned table
    from.table = data.name;
    from.table_elements = data.elements();
    if (idx.has_data) {
      from.table_index.resize(static_cast<std::size_t>(data.elements()));
      std::iota(from.table_index.begin(), from.table_index.end(), std::int64_t{0});
    }
  }
  if (!idx.has_data) {  // the dimensions alone
    from.has_data = false;
    from.table_index.clear();
  }
  std::int64_t inner = 1;
  for (std::size_t d = axis + 1; d < data.dims.size(); ++d) inner *= data.dims[d];
  const auto picks = static_cast<std::int64_t>(ids.size());
  return moved(n, from, dims, [&](std::int64_t i) {
    const std::int64_t in_inner = i % inner, rest = i / inner;
    const std::int64_t pick = rest % std::max<std::int64_t>(picks, 1), outer = rest / std::max<std::int64_t>(picks, 1);
    return (outer * size + ids[static_cast<std::size_t>(pick)]) * inner + in_inner;
  });
}

ConstTensor unsqueeze(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  ConstTensor out = operand(n, in, 0);
  out.name.clear();
  std::vector<std::int64_t> axes = axes_of(n, in);
  const auto rank = static_cast<std::int64_t>(out.dims.size() + axes.size());
  for (auto& a : axes) a = normalized_axis(n, a, rank);
  std::sort(axes.begin(), axes.end());
  for (std::int64_t a : axes) out.dims.insert(out.dims.begin() + a, 1);
  return out;
}

ConstTensor squeeze(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  ConstTensor out = operand(n, in, 0);
  out.name.clear();
  std::vector<std::int64_t> axes = axes_of(n, in);
  const auto rank = static_cast<std::int64_t>(out.dims.size());
  Shape dims;
  for (std::int64_t d = 0; d < rank; ++d) {
    const bool listed = std::any_of(axes.begin(), axes.end(),
                                    [&](std::int64_t a) { return normalized_axis(n, a, rank) == d; });
    if ((axes.empty() && out.dims[d] == 1) || listed) {
      if (out.dims[d] != 1) bad(n, fmt::format("cannot squeeze axis {} of size {}", d, out.dims[d]));
      continue;
    }
    dims.push_back(out.dims[d]);
  }
  out.dims = dims;
  return out;
}

// Concatenation along any axis, the parts alike in every other; a table's provenance is
// kept only where every part has none.
ConstTensor concat(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const ConstTensor& first = arg(n, in, 0);
  const auto rank = static_cast<std::int64_t>(first.dims.size());
  if (rank == 0) bad(n, "it concatenates scalars");
  const auto axis = static_cast<std::size_t>(normalized_axis(n, n.get_int("axis", 0), rank));
  Shape dims = first.dims, alike = first.dims;
  dims[axis] = alike[axis] = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const ConstTensor& t = arg(n, in, i);
    Shape other = t.dims;
    if (other.size() == alike.size()) other[axis] = 0;
    if (other != alike || t.is_float != first.is_float || !t.table.empty())
      bad(n, fmt::format("its parts differ in type or in a dimension besides axis {} ({} and {})", axis,
                         shape_string(first.dims), shape_string(t.dims)));
    dims[axis] += t.dims[axis];
  }
  check_size(n, dims);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= dims[d];
  for (std::size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  ConstTensor out;
  out.dims = dims;
  out.is_float = first.is_float;
  for (std::int64_t o = 0; o < outer; ++o)
    for (const ConstTensor* t : in) {
      const std::int64_t block = t->dims[axis] * inner;
      const auto from = static_cast<std::ptrdiff_t>(o * block), to = static_cast<std::ptrdiff_t>((o + 1) * block);
      if (out.is_float) out.floats.insert(out.floats.end(), t->floats.begin() + from, t->floats.begin() + to);
      else out.ints.insert(out.ints.end(), t->ints.begin() + from, t->ints.begin() + to);
    }
  return out;
}

// Any axes, any non-zero steps (negative ones backwards), as ONNX's Slice clamps them.
ConstTensor slice(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const ConstTensor& data = operand(n, in, 0);
  const auto rank = static_cast<std::int64_t>(data.dims.size());
  // Opset 10 on: starts, ends, axes and steps are inputs; before, attributes.
  const auto starts = n.get_ints("starts") ? *n.get_ints("starts") : ints_of(n, arg(n, in, 1));
  const auto ends = n.get_ints("ends") ? *n.get_ints("ends") : ints_of(n, arg(n, in, 2));
  std::vector<std::int64_t> axes = n.get_ints("axes") ? *n.get_ints("axes")
                                   : (in.size() > 3 && in[3]) ? ints_of(n, arg(n, in, 3))
                                                              : std::vector<std::int64_t>{};
  std::vector<std::int64_t> steps = in.size() > 4 && in[4] ? ints_of(n, arg(n, in, 4)) : std::vector<std::int64_t>{};
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    bad(n, "its starts, ends, axes and steps differ in number");
  std::vector<std::int64_t> begin(static_cast<std::size_t>(rank), 0), step(static_cast<std::size_t>(rank), 1);
  Shape dims = data.dims;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const auto d = static_cast<std::size_t>(normalized_axis(n, axes[i], rank));
    const std::int64_t size = data.dims[d], s = steps[i];
    if (s == 0) bad(n, "a step is 0");
    auto clamp = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
      if (v < 0) v = v < -size ? -1 : v + size;  // the ends are INT64_MIN or MAX for "to the edge"
      return std::clamp(v, lo, hi);
    };
    const std::int64_t b = s > 0 ? clamp(starts[i], 0, size) : clamp(starts[i], 0, size - 1);
    const std::int64_t e = s > 0 ? clamp(ends[i], 0, size) : clamp(ends[i], -1, size - 1);
    const std::int64_t count = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (b > e ? (b - e - s - 1) / -s : 0);
    begin[d] = b;
    step[d] = s;
    dims[d] = count;
  }
  const std::vector<std::int64_t> from = strides_of(data.dims);
  std::vector<std::int64_t> index;
  return moved(n, data, dims, [&](std::int64_t i) {
    unravel(i, dims, index);
    std::int64_t k = 0;
    for (std::size_t d = 0; d < index.size(); ++d) k += (begin[d] + index[d] * step[d]) * from[d];
    return k;
  });
}

ConstTensor transpose(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const ConstTensor& data = operand(n, in, 0);
  const auto rank = static_cast<std::int64_t>(data.dims.size());
  std::vector<std::int64_t> perm = n.get_ints("perm").value_or(std::vector<std::int64_t>{});
  if (perm.empty())
    for (std::int64_t d = rank; d-- > 0;) perm.push_back(d);
  std::vector<std::int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t d = 0; d < sorted.size(); ++d)
    if (sorted[d] != static_cast<std::int64_t>(d) || static_cast<std::int64_t>(sorted.size()) != rank)
      bad(n, "its perm is not a permutation of the axes");
  Shape dims;
  for (const std::int64_t p : perm) dims.push_back(data.dims[static_cast<std::size_t>(p)]);
  const std::vector<std::int64_t> from = strides_of(data.dims);
  std::vector<std::int64_t> index;
  return moved(n, data, dims, [&](std::int64_t i) {
    unravel(i, dims, index);
    std::int64_t k = 0;
    for (std::size_t d = 0; d < index.size(); ++d) k += index[d] * from[static_cast<std::size_t>(perm[d])];
    return k;
  });
}

// ONNX's integer Mod: with fmod 0 (the default, torch's remainder and Python's %) the
// result takes the divisor's sign; with fmod 1, C's (the dividend's). r is not 0.
std::int64_t integer_mod(std::int64_t l, std::int64_t r, bool c_sign) {
  const std::int64_t m = l % r;
  return !c_sign && m != 0 && ((m < 0) != (r < 0)) ? m + r : m;
}

ConstTensor cast(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  ConstTensor out = arg(n, in, 0);
  out.name.clear();
  const std::int64_t to = n.get_int("to", ::onnx::TensorProto::FLOAT);
  const bool to_float = to == ::onnx::TensorProto::FLOAT || to == ::onnx::TensorProto::DOUBLE;
  if (to_float && !out.is_float) {
    for (const std::int64_t v : out.ints) out.floats.push_back(static_cast<float>(v));
    out.ints.clear();
  } else if (!to_float && out.is_float) {
    for (const float v : out.floats) out.ints.push_back(static_cast<std::int64_t>(std::trunc(v)));
    out.floats.clear();
  }
  out.is_float = to_float;
  return out;
}

ConstTensor reshape(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  ConstTensor out = operand(n, in, 0);
  out.name.clear();
  const auto& target = ints_of(n, arg(n, in, 1));
  Shape dims;
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < target.size(); ++i) {
    std::int64_t d = target[i];
    if (d == 0 && i < out.dims.size()) d = out.dims[i];
    if (d == -1) {
      infer = static_cast<std::int64_t>(i);
      d = 1;
    } else if (d < 0 || d > std::max<std::int64_t>(out.elements(), 1)) {
      bad(n, fmt::format("target dimension {} does not fit {} elements", d, out.elements()));
    }
    if (d > 0 && known > std::max<std::int64_t>(out.elements(), 1) / d)
      bad(n, "the target shape does not hold the tensor's elements");
    known *= d;
    dims.push_back(d);
  }
  if (infer >= 0 && known > 0) dims[static_cast<std::size_t>(infer)] = out.elements() / known;
  if (element_count(dims) != out.elements()) bad(n, "the target shape does not hold the tensor's elements");
  out.dims = dims;
  return out;
}

// A tensor of the shape input 0 holds, every element the attribute's value (a float 0 by
// default): torch's `expand` writes it to find the -1s of its target.
ConstTensor constant_of_shape(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const auto& dims = ints_of(n, arg(n, in, 0));
  ConstTensor out;
  out.is_float = true;
  std::vector<float> value = {0.0f};
  if (const auto* a = n.find("value")) {
    const ConstTensor v = read_tensor(a->t(), fmt::format("the value of node '{}'", n.label()));
    if (v.elements() != 1 || !v.has_data) bad(n, "its value must be one element");
    out.is_float = v.is_float;
    if (!v.is_float) value = {static_cast<float>(v.ints[0])};
    else value = v.floats;
  }
  for (const std::int64_t d : dims)
    if (d < 0) bad(n, fmt::format("dimension {} is not a shape computation's", d));
  out.dims = Shape(dims.begin(), dims.end());
  check_size(n, out.dims);  // each dimension small, their product need not be
  const auto count = static_cast<std::size_t>(element_count(out.dims));
  if (out.is_float) out.floats.assign(count, value[0]);
  else out.ints.assign(count, static_cast<std::int64_t>(value[0]));
  return out;
}

// The shape numpy's broadcasting makes of `shapes` (aligned to the trailing axes, each axis
// equal or 1), at most 2^24 elements: a shape computation's or a mask's, not activations.
Shape broadcast(const NodeReader& n, const std::vector<Shape>& shapes) {
  std::size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes)
    for (std::size_t d = 0; d < s.size(); ++d) {
      std::int64_t& o = out[rank - s.size() + d];
      if (s[d] < 0 || (s[d] != o && s[d] != 1 && o != 1))
        bad(n, fmt::format("its inputs' shapes do not broadcast ({} against [{}])", shape_string(s),
                           fmt::join(out, ", ")));
      if (o == 1) o = s[d];
    }
  check_size(n, out);
  return out;
}

// For each element of a tensor of shape `out`, in order, the index of the element of a
// tensor of shape `from` broadcast to it.
std::vector<std::size_t> broadcast_sources(const Shape& from, const Shape& out) {
  const std::size_t rank = out.size();
  Shape padded(rank - from.size(), 1);
  padded.insert(padded.end(), from.begin(), from.end());
  std::vector<std::size_t> sources;
  sources.reserve(static_cast<std::size_t>(element_count(out)));
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t i = 0; i < element_count(out); ++i) {
    std::int64_t source = 0;
    for (std::size_t d = 0; d < rank; ++d) source = source * padded[d] + (padded[d] == 1 ? 0 : index[d]);
    sources.push_back(static_cast<std::size_t>(source));
    for (std::size_t d = rank; d-- > 0;) {  // the next element: carry through the axes
      if (++index[d] < out[d]) break;
      index[d] = 0;
    }
  }
  return sources;
}

// Equal and Where of constants (integers, or floats for Where's values and Equal's
// operands), element by element, broadcast as numpy does.
ConstTensor equal_or_where(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const bool where = n.op_type() == "Where";
  const std::size_t count = where ? 3 : 2;
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < count; ++i) shapes.push_back(arg(n, in, i).dims);
  const ConstTensor& first = arg(n, in, where ? 1 : 0);  // the operands compared or chosen between
  if (first.is_float != arg(n, in, count - 1).is_float) bad(n, "its operands are of different types");
  if (where) ints_of(n, arg(n, in, 0));  // the condition
  ConstTensor out;
  out.dims = broadcast(n, shapes);
  out.is_float = where && first.is_float;
  std::vector<std::vector<std::size_t>> sources;
  for (const Shape& s : shapes) sources.push_back(broadcast_sources(s, out.dims));
  auto equal = [&](std::size_t i) {
    if (first.is_float) return in[0]->floats[sources[0][i]] == in[1]->floats[sources[1][i]];
    return in[0]->ints[sources[0][i]] == in[1]->ints[sources[1][i]];
  };
  for (std::size_t i = 0; i < sources[0].size(); ++i) {
    if (!where) {
      out.ints.push_back(equal(i));
      continue;
    }
    const std::size_t pick = in[0]->ints[sources[0][i]] != 0 ? 1 : 2;
    if (out.is_float) out.floats.push_back(in[pick]->floats[sources[pick][i]]);
    else out.ints.push_back(in[pick]->ints[sources[pick][i]]);
  }
  return out;
}

// Expand of a constant to a target shape, as numpy broadcasts (torch's expand of a shape
// computation's tensor; Swin's masks).
ConstTensor expand(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const ConstTensor& data = arg(n, in, 0);
  const auto& target = ints_of(n, arg(n, in, 1));
  ConstTensor t;
  t.dims = broadcast(n, {data.dims, Shape(target.begin(), target.end())});
  t.is_float = data.is_float;
  for (const std::size_t source : broadcast_sources(data.dims, t.dims)) {
    if (t.is_float) t.floats.push_back(data.floats[source]);
    else t.ints.push_back(data.ints[source]);
  }
  return t;
}

// Element-wise arithmetic of constants broadcast as numpy does: integers (Add, Sub, Mul,
// Div, Mod: a shape computation's, checked for overflow) or floats (Add, Sub, Mul, Div,
// Pow: Swin's mask).
ConstTensor arithmetic(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const ConstTensor &a = arg(n, in, 0), &b = arg(n, in, 1);
  const std::string& op = n.op_type();
  ConstTensor out;
  out.dims = broadcast(n, {a.dims, b.dims});
  const std::vector<std::size_t> from_a = broadcast_sources(a.dims, out.dims), from_b = broadcast_sources(b.dims, out.dims);
  if (a.is_float || b.is_float) {
    if (!a.is_float || (!b.is_float && op != "Pow")) bad(n, "its operands are of different types");
    if (op == "Mod") bad(n, "folds Mod of integers only");
    out.is_float = true;
    for (std::size_t i = 0; i < from_a.size(); ++i) {
      const float l = a.floats[from_a[i]];
      const float r = b.is_float ? b.floats[from_b[i]] : static_cast<float>(b.ints[from_b[i]]);
      out.floats.push_back(op == "Add" ? l + r : op == "Sub" ? l - r : op == "Mul" ? l * r : op == "Div" ? l / r
                                                                                            : std::pow(l, r));
    }
    return out;
  }
  if (op == "Pow") bad(n, "folds Pow of floats only");
  for (std::size_t i = 0; i < from_a.size(); ++i) {
    const std::int64_t l = a.ints[from_a[i]], r = b.ints[from_b[i]];
    std::int64_t v = 0;
    bool overflow = false;
    if (op == "Add") overflow = __builtin_add_overflow(l, r, &v);
    else if (op == "Sub") overflow = __builtin_sub_overflow(l, r, &v);
    else if (op == "Mul") overflow = __builtin_mul_overflow(l, r, &v);
    else if (r == 0 || (r == -1 && l == std::numeric_limits<std::int64_t>::min())) bad(n, "divides by zero or overflows");
    else if (op == "Div") v = l / r;
    else v = integer_mod(l, r, n.get_int("fmod", 0) != 0);
    if (overflow) bad(n, "overflows 64-bit integers");
    out.ints.push_back(v);
  }
  return out;
}

// Not of a boolean tensor (held as integers).
ConstTensor logical_not(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  ConstTensor out = arg(n, in, 0);
  out.name.clear();
  ints_of(n, out);
  for (std::int64_t& v : out.ints) v = v == 0 ? 1 : 0;
  return out;
}

// Neg (integers or floats), and Sqrt, Floor and Ceil (floats: interpolate's
// recompute_scale_factor computes its sizes so) element by element.
ConstTensor unary(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  ConstTensor out = arg(n, in, 0);
  out.name.clear();
  out.table.clear();
  out.table_index.clear();
  const std::string& op = n.op_type();
  const bool negate = op == "Neg";
  if (!out.is_float && !negate) bad(n, fmt::format("folds {} of floats only", op));
  for (float& v : out.floats) v = negate ? -v : op == "Sqrt" ? std::sqrt(v) : op == "Floor" ? std::floor(v) : std::ceil(v);
  for (std::int64_t& v : out.ints) {
    if (v == std::numeric_limits<std::int64_t>::min()) bad(n, "overflows 64-bit integers");
    v = -v;
  }
  return out;
}

// Range(start, limit, delta) of scalars: integers or floats.
ConstTensor range(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const ConstTensor &start = arg(n, in, 0), &limit = arg(n, in, 1), &delta = arg(n, in, 2);
  if (start.elements() != 1 || limit.elements() != 1 || delta.elements() != 1) bad(n, "its inputs must be scalars");
  if (start.is_float != limit.is_float || start.is_float != delta.is_float) bad(n, "its inputs are of different types");
  auto value = [](const ConstTensor& t) { return t.is_float ? static_cast<double>(t.floats[0]) : static_cast<double>(t.ints[0]); };
  const double s = value(start), l = value(limit), d = value(delta);
  if (d == 0) bad(n, "its delta is 0");
  const double count = std::max(std::ceil((l - s) / d), 0.0);
  if (!(count <= static_cast<double>(kMaxFolded))) bad(n, "it makes more than 2^24 elements");
  ConstTensor out;
  out.is_float = start.is_float;
  out.dims = {static_cast<std::int64_t>(count)};
  for (std::int64_t i = 0; i < out.dims[0]; ++i) {
    if (out.is_float) out.floats.push_back(static_cast<float>(s + static_cast<double>(i) * d));
    else out.ints.push_back(start.ints[0] + i * delta.ints[0]);
  }
  return out;
}

// ScatterND(data, indices [..., k], updates): a copy of data with the slices the indices
// name replaced by the updates, in order (reduction none).
ConstTensor scatter_nd(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  ConstTensor out = arg(n, in, 0);
  out.name.clear();
  const ConstTensor &indices = arg(n, in, 1), &updates = arg(n, in, 2);
  if (n.get_string("reduction", "none") != "none") bad(n, "folds only reduction none");
  if (indices.dims.empty() || indices.is_float || updates.is_float != out.is_float)
    bad(n, "its indices must be integers [..., k] and its updates of the data's type");
  const auto k = static_cast<std::size_t>(indices.dims.back());
  if (k > out.dims.size()) bad(n, "its index tuples are longer than the data's rank");
  std::int64_t slice = 1;
  for (std::size_t d = k; d < out.dims.size(); ++d) slice *= out.dims[d];
  const std::int64_t tuples = indices.elements() / std::max<std::int64_t>(static_cast<std::int64_t>(k), 1);
  if (k == 0 || updates.elements() != tuples * slice) bad(n, "its updates do not fit its indices and data");
  const std::vector<std::int64_t> strides = strides_of(out.dims);
  for (std::int64_t t = 0; t < tuples; ++t) {
    std::int64_t base = 0;
    for (std::size_t d = 0; d < k; ++d) {
      std::int64_t i = indices.ints[static_cast<std::size_t>(t) * k + d];
      if (i < -out.dims[d] || i >= out.dims[d]) bad(n, fmt::format("index {} is outside an axis of {}", i, out.dims[d]));
      if (i < 0) i += out.dims[d];
      base += i * strides[d];
    }
    for (std::int64_t e = 0; e < slice; ++e) {
      const auto to = static_cast<std::size_t>(base + e), from = static_cast<std::size_t>(t * slice + e);
      if (out.is_float) out.floats[to] = updates.floats[from];
      else out.ints[to] = updates.ints[from];
    }
  }
  return out;
}

}  // namespace

bool is_foldable(const std::string& op) {
  static const std::array<const char*, 27> ops = {
      "Constant", "Identity", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Reshape",
      "Add", "Sub", "Mul", "Div", "Mod", "Pow", "ConstantOfShape", "Equal", "Where", "Expand",
      "Transpose", "Range", "ScatterND", "Not", "Neg", "Sqrt", "Floor", "Ceil"};
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

ConstTensor constant_value(const NodeReader& n) {
  if (const auto* a = n.find("value")) return read_tensor(a->t(), fmt::format("the value of node '{}'", n.label()));
  if (const auto* a = n.find("value_int")) return int_tensor({}, {a->i()});
  if (const auto* a = n.find("value_ints"))
    return int_tensor({a->ints_size()}, std::vector<std::int64_t>(a->ints().begin(), a->ints().end()));
  ConstTensor t;
  t.is_float = true;
  if (const auto* a = n.find("value_float")) {
    t.floats = {a->f()};
    return t;
  }
  if (const auto* a = n.find("value_floats")) {
    t.floats.assign(a->floats().begin(), a->floats().end());
    t.dims = {a->floats_size()};
    return t;
  }
  bad(n, "a Constant must hold a tensor, an integer or a float (value, value_int(s), value_float(s))");
}

ConstTensor fold(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const std::string& op = n.op_type();
  if (op == "Constant") return constant_value(n);
  if (op == "Identity") {  // of a weight too, which may have no data in a structure-only file
    if (in.empty() || !in[0]) bad(n, "input 0 is missing");
    return *in[0];
  }
  if (op == "Gather") return gather(n, in);
  if (op == "Unsqueeze") return unsqueeze(n, in);
  if (op == "Squeeze") return squeeze(n, in);
  if (op == "Concat") return concat(n, in);
  if (op == "Slice") return slice(n, in);
  if (op == "Cast") return cast(n, in);
  if (op == "Reshape") return reshape(n, in);
  if (op == "ConstantOfShape") return constant_of_shape(n, in);
  if (op == "Equal" || op == "Where") return equal_or_where(n, in);
  if (op == "Expand") return expand(n, in);
  if (op == "Transpose") return transpose(n, in);
  if (op == "Range") return range(n, in);
  if (op == "ScatterND") return scatter_nd(n, in);
  if (op == "Not") return logical_not(n, in);
  if (op == "Neg" || op == "Sqrt" || op == "Floor" || op == "Ceil") return unary(n, in);
  return arithmetic(n, in);
}

}  // namespace poet::onnx_import
