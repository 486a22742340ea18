#include "constant_folding.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

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

ConstTensor gather(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const ConstTensor& data = arg(n, in, 0);
  const auto& idx = ints_of(n, arg(n, in, 1));
  if (data.dims.size() != 1 || n.get_int("axis", 0) != 0) bad(n, "folds only a gather from a 1-D constant");
  const auto size = static_cast<std::int64_t>(data.dims[0]);
  ConstTensor out = data;
  out.name.clear();
  out.dims = arg(n, in, 1).dims;
  out.ints.clear();
  out.floats.clear();
  for (std::int64_t i : idx) {
    if (i < -size || i >= size) bad(n, fmt::format("index {} is outside [0, {})", i, size));
    if (i < 0) i += size;
    if (data.is_float)
      out.floats.push_back(data.floats[static_cast<std::size_t>(i)]);
    else
      out.ints.push_back(data.ints[static_cast<std::size_t>(i)]);
  }
  return out;
}

ConstTensor unsqueeze(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  ConstTensor out = arg(n, in, 0);
  out.name.clear();
  std::vector<std::int64_t> axes = axes_of(n, in);
  const auto rank = static_cast<std::int64_t>(out.dims.size() + axes.size());
  for (auto& a : axes) a = normalized_axis(n, a, rank);
  std::sort(axes.begin(), axes.end());
  for (std::int64_t a : axes) out.dims.insert(out.dims.begin() + a, 1);
  return out;
}

ConstTensor squeeze(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  ConstTensor out = arg(n, in, 0);
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

ConstTensor concat(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  ConstTensor out;
  out.is_float = arg(n, in, 0).is_float;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const ConstTensor& t = arg(n, in, i);
    if (t.dims.size() != 1 || t.is_float != out.is_float) bad(n, "folds only a concatenation of 1-D constants");
    out.ints.insert(out.ints.end(), t.ints.begin(), t.ints.end());
    out.floats.insert(out.floats.end(), t.floats.begin(), t.floats.end());
  }
  out.dims = {static_cast<std::int64_t>(out.is_float ? out.floats.size() : out.ints.size())};
  return out;
}

ConstTensor slice(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const ConstTensor& data = arg(n, in, 0);
  if (data.dims.size() != 1 || data.is_float) bad(n, "folds only a slice of a 1-D integer constant");
  const auto size = static_cast<std::int64_t>(data.ints.size());
  // Opset 10 on: starts, ends, axes and steps are inputs; before, attributes.
  const auto starts = n.get_ints("starts") ? *n.get_ints("starts") : ints_of(n, arg(n, in, 1));
  const auto ends = n.get_ints("ends") ? *n.get_ints("ends") : ints_of(n, arg(n, in, 2));
  const std::int64_t step = in.size() > 4 && in[4] ? ints_of(n, arg(n, in, 4)).at(0) : 1;
  if (starts.size() != 1 || ends.size() != 1 || step != 1) bad(n, "folds only a slice with one start, end and step 1");
  auto clamp = [&](std::int64_t v) { return std::clamp(v < 0 ? v + size : v, std::int64_t{0}, size); };
  const std::int64_t b = clamp(starts[0]), e = clamp(ends[0]);
  std::vector<std::int64_t> values;
  for (std::int64_t i = b; i < e; ++i) values.push_back(data.ints[static_cast<std::size_t>(i)]);
  return int_tensor({static_cast<std::int64_t>(values.size())}, values);
}

// ONNX's integer Mod: with fmod 0 (the default, torch's remainder and Python's %) the
// result takes the divisor's sign; with fmod 1, C's (the dividend's). r is not 0.
std::int64_t integer_mod(std::int64_t l, std::int64_t r, bool c_sign) {
  const std::int64_t m = l % r;
  return !c_sign && m != 0 && ((m < 0) != (r < 0)) ? m + r : m;
}

ConstTensor arithmetic(const NodeReader& n, const std::vector<const ConstTensor*>& in) {
  const ConstTensor &a = arg(n, in, 0), &b = arg(n, in, 1);
  const auto &x = ints_of(n, a), &y = ints_of(n, b);
  if (x.size() != y.size() && x.size() != 1 && y.size() != 1) bad(n, "folds only operands of one size or a scalar");
  const std::size_t size = std::max(x.size(), y.size());
  std::vector<std::int64_t> out(size);
  for (std::size_t i = 0; i < size; ++i) {
    const std::int64_t l = x[x.size() == 1 ? 0 : i], r = y[y.size() == 1 ? 0 : i];
    const std::string& op = n.op_type();
    bool overflow = false;
    if (op == "Add") overflow = __builtin_add_overflow(l, r, &out[i]);
    else if (op == "Sub") overflow = __builtin_sub_overflow(l, r, &out[i]);
    else if (op == "Mul") overflow = __builtin_mul_overflow(l, r, &out[i]);
    else if (r == 0 || (r == -1 && l == std::numeric_limits<std::int64_t>::min())) bad(n, "divides by zero or overflows");
    else if (op == "Div") out[i] = l / r;
    else out[i] = integer_mod(l, r, n.get_int("fmod", 0) != 0);
    if (overflow) bad(n, "overflows 64-bit integers");
  }
  return int_tensor(x.size() >= y.size() ? a.dims : b.dims, out);
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
  ConstTensor out = arg(n, in, 0);
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
    if (d < 0 || d > (1 << 20)) bad(n, fmt::format("dimension {} is not a shape computation's", d));
  out.dims = Shape(dims.begin(), dims.end());
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
  if (!bounded_element_count(out) || element_count(out) > (std::int64_t{1} << 24))
    bad(n, fmt::format("it makes {}, more than 2^24 elements, beyond a shape computation's", shape_string(out)));
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

}  // namespace

bool is_foldable(const std::string& op) {
  static const std::array<const char*, 16> ops = {"Constant", "Identity", "Gather", "Unsqueeze",       "Squeeze",
                                                  "Concat",   "Slice",    "Cast",   "Reshape",         "Add",
                                                  "Sub",      "Mul",      "ConstantOfShape", "Equal", "Where",
                                                  "Expand"};
  return op == "Div" || op == "Mod" || std::find(ops.begin(), ops.end(), op) != ops.end();
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
  return arithmetic(n, in);
}

}  // namespace poet::onnx_import
