#include "tensor_data.h"

#include <fmt/format.h>

#include <cstring>

#include "poet/util/error.h"

namespace poet::onnx_import {
namespace {

using ::onnx::TensorProto;

// One little-endian integer of type T at p (raw_data need not be aligned).
template <typename T>
std::int64_t load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<std::int64_t>(v);
}

std::int64_t raw_integer(const char* p, int type) {
  switch (type) {
    case TensorProto::INT64: return load<std::int64_t>(p);
    case TensorProto::UINT64: return load<std::uint64_t>(p);
    case TensorProto::INT32: return load<std::int32_t>(p);
    case TensorProto::UINT32: return load<std::uint32_t>(p);
    case TensorProto::INT16: return load<std::int16_t>(p);
    case TensorProto::UINT16: return load<std::uint16_t>(p);
    case TensorProto::INT8: return load<std::int8_t>(p);
    default: return load<std::uint8_t>(p);
  }
}

void expect_count(std::int64_t have, std::int64_t want, const std::string& what) {
  if (have != want)
    throw InputError(fmt::format("{} holds {} values but its dimensions say {}; the file is damaged", what, have,
                                 want));
}

}  // namespace

Shape checked_dims(const TensorProto& t, const std::string& what) {
  Shape dims;
  std::int64_t count = 1;
  for (const std::int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && count > kMaxTensorElements / d))
      throw InputError(fmt::format("{} has dimensions that are negative or too large ({} elements at most)", what,
                                   kMaxTensorElements));
    count *= d;
    dims.push_back(d);
  }
  return dims;
}

std::size_t raw_element_bytes(int type) {
  switch (type) {
    case TensorProto::DOUBLE:
    case TensorProto::INT64:
    case TensorProto::UINT64:
      return 8;
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32:
      return 4;
    case TensorProto::INT16:
    case TensorProto::UINT16:
      return 2;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      return 1;
    default:
      return 0;
  }
}

bool is_structure_only(const TensorProto& t) {
  bool has_elements = true;
  for (const std::int64_t d : t.dims()) has_elements = has_elements && d > 0;
  return has_elements && !t.has_raw_data() && t.float_data_size() == 0 && t.int64_data_size() == 0 &&
         t.int32_data_size() == 0 && t.double_data_size() == 0 && t.uint64_data_size() == 0 &&
         t.data_location() != TensorProto::EXTERNAL;
}

ConstTensor read_tensor(const TensorProto& t, const std::string& what) {
  ConstTensor c;
  c.name = t.name();
  c.dims = checked_dims(t, what);
  const std::int64_t n = element_count(c.dims);
  const int type = t.data_type();
  if (type == TensorProto::FLOAT || type == TensorProto::DOUBLE) {
    c.is_float = true;
  } else if (raw_element_bytes(type) == 0) {
    throw InputError(fmt::format("{} has element type {}, which poet does not read: it trains float32 models",
                                 what, TensorProto::DataType_Name(static_cast<TensorProto::DataType>(type))));
  }
  if (t.data_location() == TensorProto::EXTERNAL)  // only a Constant node's: initializers' are read in
    throw InputError(fmt::format("{} keeps its data in an external file, which poet reads for initializers only; "
                                 "export the model with its constants inside",
                                 what));
  if (is_structure_only(t)) {
    c.has_data = false;
    return c;
  }
  const auto count = static_cast<std::size_t>(n);
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    const std::size_t width = raw_element_bytes(type);
    expect_count(static_cast<std::int64_t>(raw.size() / width), n, what);
    if (raw.size() % width != 0) expect_count(-1, n, what);
    if (type == TensorProto::FLOAT) {
      c.floats.resize(count);
      if (count > 0) std::memcpy(c.floats.data(), raw.data(), count * 4);
    } else if (type == TensorProto::DOUBLE) {
      c.floats.resize(count);
      for (std::size_t i = 0; i < count; ++i) {
        double v;
        std::memcpy(&v, raw.data() + 8 * i, 8);
        c.floats[i] = static_cast<float>(v);
      }
    } else {
      c.ints.resize(count);
      for (std::size_t i = 0; i < count; ++i) c.ints[i] = raw_integer(raw.data() + width * i, type);
    }
    return c;
  }
  if (type == TensorProto::FLOAT) {
    expect_count(t.float_data_size(), n, what);
    c.floats.assign(t.float_data().begin(), t.float_data().end());
  } else if (type == TensorProto::DOUBLE) {
    expect_count(t.double_data_size(), n, what);
    for (const double v : t.double_data()) c.floats.push_back(static_cast<float>(v));
  } else if (type == TensorProto::INT64) {
    expect_count(t.int64_data_size(), n, what);
    c.ints.assign(t.int64_data().begin(), t.int64_data().end());
  } else if (type == TensorProto::UINT64) {
    expect_count(t.uint64_data_size(), n, what);
    for (const std::uint64_t v : t.uint64_data()) c.ints.push_back(static_cast<std::int64_t>(v));
  } else {  // the narrower integers and bool are stored in int32_data
    expect_count(t.int32_data_size(), n, what);
    c.ints.assign(t.int32_data().begin(), t.int32_data().end());
  }
  return c;
}

const std::vector<std::int64_t>& int_values(const ConstTensor& t, const std::string& what) {
  if (t.is_float || !t.has_data)
    throw InputError(fmt::format("{} must be an integer tensor with data (a shape, axes or indices)", what));
  return t.ints;
}

}  // namespace poet::onnx_import
