// Small ONNX models written from C++, for the importer's tests of hostile and unsupported
// files: a graph with input x and output y, and the nodes and initializers a test adds.
#pragma once

#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "poet/onnx/onnx_import.h"
#include "poet/util/error.h"

namespace poet::testing::onnx_builder {

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / ("poet_onnx_" + name)).string();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void add_value(::onnx::ValueInfoProto* v, const std::string& name, const Shape& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(::onnx::TensorProto::FLOAT);
  for (const std::int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

inline void add_initializer(::onnx::GraphProto& g, const std::string& name, const Shape& dims, float value) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  std::int64_t n = 1;
  for (const std::int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  for (std::int64_t i = 0; i < n; ++i) t->add_float_data(value + 0.01f * static_cast<float>(i));
}

// A 1-D int64 initializer (a shape, pads, axes).
inline void add_int64_initializer(::onnx::GraphProto& g, const std::string& name,
                                  const std::vector<std::int64_t>& values) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::INT64);
  t->add_dims(static_cast<std::int64_t>(values.size()));
  for (const std::int64_t v : values) t->add_int64_data(v);
}

// A 1-D float initializer of these values (a Resize's scales).
inline void add_floats_initializer(::onnx::GraphProto& g, const std::string& name, const std::vector<float>& values) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_dims(static_cast<std::int64_t>(values.size()));
  for (const float v : values) t->add_float_data(v);
}

// A Constant node making float tensor `out` (what torch writes for tensors it computes).
inline void add_float_constant(::onnx::GraphProto& g, const std::string& out, const Shape& dims,
                               const std::vector<float>& values);

inline ::onnx::NodeProto* add_node(::onnx::GraphProto& g, const std::string& name, const std::string& op,
                            std::vector<std::string> in, std::string out) {
  auto* n = g.add_node();
  n->set_name(name);
  n->set_op_type(op);
  for (auto& i : in) n->add_input(i);
  n->add_output(std::move(out));
  return n;
}

// Sets attribute `name` of node n to a list of integers (strides, pads, axes, ...).
inline void add_float_constant(::onnx::GraphProto& g, const std::string& out, const Shape& dims,
                               const std::vector<float>& values) {
  auto* a = add_node(g, out + "_constant", "Constant", {}, out)->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(::onnx::TensorProto::FLOAT);
  for (const std::int64_t d : dims) a->mutable_t()->add_dims(d);
  for (const float v : values) a->mutable_t()->add_float_data(v);
}

inline void add_ints_attribute(::onnx::NodeProto* n, const std::string& name, const std::vector<std::int64_t>& values) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (const std::int64_t v : values) a->add_ints(v);
}

// Sets attribute `name` of node n to one integer or one float.
inline void add_int_attribute(::onnx::NodeProto* n, const std::string& name, std::int64_t value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
}
inline void add_string_attribute(::onnx::NodeProto* n, const std::string& name, const std::string& value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(value);
}
inline void add_float_attribute(::onnx::NodeProto* n, const std::string& name, float value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

// A model with input x of `input` dims and output y of `output` dims, whose nodes `body` adds.
inline std::string write_model(const std::string& name, const Shape& input, const Shape& output,
                        const std::function<void(::onnx::GraphProto&)>& body, int opset = 13) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  ::onnx::GraphProto& g = *m.mutable_graph();
  g.set_name(name);
  add_value(g.add_input(), "x", input);
  add_value(g.add_output(), "y", output);
  body(g);
  const std::string path = temp_path(name + ".onnx");
  write_bytes(path, m.SerializeAsString());
  return path;
}

// The message of the InputError importing `path` throws; fails the test if none is thrown.
inline std::string import_error(const std::string& path) {
  try {
    import_onnx(path, {.batch_size = 2});
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "importing " << path << " did not fail";
  return {};
}

// Whether importing `path` fails with a message holding `text`; else the message, for the
// test's output.
inline ::testing::AssertionResult import_refused_with(const std::string& path, const std::string& text) {
  const std::string why = import_error(path);
  if (why.find(text) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "importing " << path << " said: " << why;
}

}  // namespace poet::testing::onnx_builder
