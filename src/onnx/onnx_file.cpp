#include "onnx_file.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "poet/util/error.h"
#include "poet/util/input_file.h"
#include "tensor_data.h"

namespace poet::onnx_import {

::onnx::ModelProto read_model_file(const std::string& path) {
  // Protobuf parses at most 2 GiB; ONNX keeps larger models' weights in other files.
  const std::string data = read_input_file(path, "ONNX file", std::uintmax_t{2} << 30);
  ::onnx::ModelProto model;
  if (data.empty() || !model.ParseFromString(data))
    throw InputError(fmt::format("'{}' is not an ONNX model (not a protobuf ModelProto, or truncated); export one "
                                 "with torch.onnx.export",
                                 path));
  if (!model.has_graph() || model.graph().node_size() == 0)
    throw InputError(fmt::format("'{}' holds no ONNX graph (no nodes); it is not a model torch.onnx.export wrote",
                                 path));
  return model;
}

namespace {

// ONNX's shape inference divides by a convolution's or pooling's strides unchecked (a stride
// of 0 stopped the process with SIGFPE: the fuzzer found it), so the attributes ONNX
// requires positive are checked first, in every graph a node may hold (If, Loop, Scan).
void check_window_attributes(const ::onnx::GraphProto& g, const std::string& path) {
  for (const ::onnx::NodeProto& n : g.node()) {
    for (const ::onnx::AttributeProto& a : n.attribute()) {
      for (const ::onnx::GraphProto& sub : a.graphs()) check_window_attributes(sub, path);
      if (a.has_g()) check_window_attributes(a.g(), path);
      const bool pads = a.name() == "pads";
      if (!pads && a.name() != "strides" && a.name() != "dilations" && a.name() != "kernel_shape") continue;
      const std::int64_t least = pads ? 0 : 1;
      for (const std::int64_t v : a.ints())
        if (v < least)
          throw InputError(fmt::format("'{}' is not a valid ONNX model: node '{}' ({}) has {} {}, and each must be "
                                       "{}; export the model again",
                                       path, n.name(), n.op_type(), a.name(), v,
                                       pads ? "0 or more" : "at least 1"));
    }
  }
}

}  // namespace

::onnx::ModelProto checked_with_shapes(const ::onnx::ModelProto& model, const std::string& input, int batch,
                                       const std::string& path) {
  ::onnx::ModelProto m = model;
  ::onnx::GraphProto& g = *m.mutable_graph();
  // Shapes the exporter recorded for its own batch would contradict the new batch.
  g.clear_value_info();
  for (auto& v : *g.mutable_input()) {
    if (v.name() != input || !v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
    auto* shape = v.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() > 0) shape->mutable_dim(0)->set_dim_value(batch);
  }
  for (auto& v : *g.mutable_output()) {  // a symbolic batch merges with the one inferred
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
    auto* shape = v.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() > 0) shape->mutable_dim(0)->set_dim_param("batch");
  }
  // Weights without data: the checker wants one value field per initializer, so a
  // structure-only file's are checked as graph inputs of their type and dimensions.
  auto* inits = g.mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i) {
    const ::onnx::TensorProto& t = inits->Get(i);
    if (!is_structure_only(t)) continue;
    ::onnx::ValueInfoProto* v = g.add_input();
    v->set_name(t.name());
    auto* tensor = v->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(t.data_type());
    for (const std::int64_t d : t.dims()) tensor->mutable_shape()->add_dim()->set_dim_value(d);
    inits->DeleteSubrange(i, 1);
  }
  check_window_attributes(g, path);
  try {
    ::onnx::checker::check_model(m);
    ::onnx::shape_inference::InferShapes(m, ::onnx::OpSchemaRegistry::Instance(),
                                         ::onnx::ShapeInferenceOptions(/*check_type=*/true, /*error_mode=*/1));
  } catch (const std::exception& e) {
    throw InputError(fmt::format("'{}' is not a valid ONNX model: {}", path, e.what()));
  }
  return m;
}

}  // namespace poet::onnx_import
