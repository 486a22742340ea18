#include "onnx_file.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "poet/util/error.h"
#include "poet/util/input_file.h"
#include "tensor_data.h"

namespace poet::onnx_import {
namespace {

// The "location" of an initializer's external data, "" if it has none.
std::string external_location(const ::onnx::TensorProto& t) {
  for (const auto& entry : t.external_data())
    if (entry.key() == "location") return entry.value();
  return "";
}

// The external data of initializer `t` ("location", "offset", "length"), read into its
// raw_data from the file `location` names in `folder` (the model's): ONNX keeps the weights
// of models over protobuf's 2 GB so, and of any model saved with save_as_external_data.
void read_external_data(::onnx::TensorProto& t, const std::filesystem::path& folder, const std::string& path) {
  const std::string what = fmt::format("'{}': initializer '{}'", path, t.name());
  const std::string location = external_location(t);
  std::int64_t offset = 0, length = -1;
  for (const auto& entry : t.external_data()) {
    const auto number = [&](std::int64_t& into) {
      const std::string& v = entry.value();
      const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), into);
      if (error != std::errc() || end != v.data() + v.size() || into < 0)
        throw InputError(fmt::format("{} has external data {} '{}', not a byte count; the file is damaged", what,
                                     entry.key(), v));
    };
    if (entry.key() == "offset") number(offset);
    if (entry.key() == "length") number(length);
  }
  const std::filesystem::path relative(location);
  const bool inside = !location.empty() && relative.is_relative() &&
                      std::none_of(relative.begin(), relative.end(), [](const auto& part) { return part == ".."; });
  if (!inside)
    throw InputError(fmt::format("{} keeps its data in an external file named '{}', which is not a file inside the "
                                 "model's folder, as ONNX asks; the file is damaged or was not exported by ONNX",
                                 what, location));
  const std::size_t width = raw_element_bytes(t.data_type());
  if (width == 0) return;  // read_tensor names the type it cannot use
  const std::int64_t bytes = element_count(checked_dims(t, what)) * static_cast<std::int64_t>(width);
  if (length >= 0 && length != bytes)
    throw InputError(fmt::format("{} has {} bytes of external data but its dimensions need {}; the file is damaged",
                                 what, length, bytes));
  const std::string file = (folder / relative).string();
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(file, error);
  if (error || !std::filesystem::is_regular_file(file))
    throw InputError(fmt::format("{} keeps its data in '{}', which cannot be read ({}); keep the model's data files "
                                 "beside it",
                                 what, file, error ? error.message() : "not a regular file"));
  if (static_cast<std::uintmax_t>(offset) + static_cast<std::uintmax_t>(bytes) > size)
    throw InputError(fmt::format("{} needs bytes {} to {} of '{}', which has {}; the data file is cut short or "
                                 "belongs to another model",
                                 what, offset, offset + bytes, file, size));
  std::string raw(static_cast<std::size_t>(bytes), '\0');
  std::ifstream in(file, std::ios::binary);
  if (!in.seekg(offset) || !in.read(raw.data(), bytes))
    throw InputError(fmt::format("{}: cannot read bytes {} to {} of '{}'", what, offset, offset + bytes, file));
  t.set_raw_data(std::move(raw));
  t.clear_external_data();
  t.set_data_location(::onnx::TensorProto::DEFAULT);
}


// The protobuf of `path`, its external data not read.
::onnx::ModelProto parse_model_file(const std::string& path) {
  const auto not_onnx = [&] {
    return InputError(fmt::format("'{}' is not an ONNX model (not a protobuf ModelProto, or truncated); export one "
                                  "with torch.onnx.export",
                                  path));
  };
  // A protobuf message begins with a field's tag: a field number from 1 and a wire type below
  // 6. Checked on the first byte, a stream of something else (/dev/zero) is refused at once.
  const auto first_byte_is_a_tag = [&](std::string_view piece) {
    if (piece.empty()) return;
    const auto tag = static_cast<unsigned char>(piece[0]);
    if (tag < 8 || (tag & 7) >= 6) throw not_onnx();
  };
  // Protobuf parses at most 2 GiB; ONNX keeps larger models' weights in other files.
  const std::string data = read_input_file(path, "ONNX file", std::uintmax_t{2} << 30,
                                           first_piece_inspector(first_byte_is_a_tag));
  ::onnx::ModelProto model;
  if (data.empty() || !model.ParseFromString(data)) throw not_onnx();
  if (!model.has_graph() || model.graph().node_size() == 0)
    throw InputError(fmt::format("'{}' holds no ONNX graph (no nodes); it is not a model torch.onnx.export wrote",
                                 path));
  return model;
}

}  // namespace

std::vector<std::string> external_data_files(const std::string& path) {
  const ::onnx::ModelProto model = parse_model_file(path);
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::vector<std::string> files;
  for (const auto& t : model.graph().initializer()) {
    const std::string location = external_location(t);
    if (t.data_location() != ::onnx::TensorProto::EXTERNAL || location.empty()) continue;
    const std::string file = (folder / location).string();
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
  }
  return files;
}

::onnx::ModelProto read_model_file(const std::string& path) {
  ::onnx::ModelProto model = parse_model_file(path);
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  for (auto& t : *model.mutable_graph()->mutable_initializer())
    if (t.data_location() == ::onnx::TensorProto::EXTERNAL) read_external_data(t, folder, path);
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


// ONNX's checker reports an input no node makes as "Nodes in a graph must be topologically
// sorted", whatever the cause: here an input is named as missing, or as made later.
void check_every_input_defined(const ::onnx::GraphProto& g, const std::string& path) {
  std::unordered_set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  std::unordered_map<std::string, const ::onnx::NodeProto*> maker;
  for (const auto& n : g.node())
    for (const auto& out : n.output()) maker.emplace(out, &n);
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) {
      if (in.empty() || defined.contains(in)) continue;
      const auto later = maker.find(in);
      throw InputError(
          later == maker.end()
              ? fmt::format("'{}' is not a valid ONNX model: node '{}' ({}) reads '{}', which is defined nowhere (no "
                            "graph input, initializer or node makes it); the file is damaged or was not exported "
                            "whole",
                            path, n.name(), n.op_type(), in)
              : fmt::format("'{}' is not a valid ONNX model: node '{}' ({}) reads '{}', which node '{}' makes after "
                            "it: the nodes are out of order or in a cycle; export the model again",
                            path, n.name(), n.op_type(), in, later->second->name()));
    }
    for (const auto& out : n.output()) defined.insert(out);
  }
}

// ONNX's messages on one line: they hold newlines, some written as the two characters "\n".
std::string one_line_of(std::string text) {
  for (std::size_t at; (at = text.find("\\n")) != std::string::npos;) text.replace(at, 2, "; ");
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && (text.back() == ' ' || text.back() == ';')) text.pop_back();
  return text;
}

// What a checker's or shape inference's failure most likely comes from, when the file says:
// an opset newer than this poet's ONNX knows, a layer norm without its scale, or a batch
// fixed at export.
std::string likely_cause(const ::onnx::ModelProto& m, const std::string& input, std::int64_t file_batch, int batch) {
  const int known = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(::onnx::ONNX_DOMAIN).second;
  for (const auto& o : m.opset_import())
    if ((o.domain().empty() || o.domain() == "ai.onnx") && o.version() > known)
      return fmt::format(" (the file uses opset {}, and this poet knows operators up to opset {}: export with "
                         "opset_version={})",
                         o.version(), known, known);
  // torch 1.13 exports LayerNorm(elementwise_affine=False) at opset 17 so; the operator
  // requires a scale. At opset 13 torch writes the norm out in operators poet imports.
  for (const auto& n : m.graph().node())
    if (n.op_type() == "LayerNormalization" && (n.input_size() < 2 || n.input(1).empty()))
      return fmt::format(" (its LayerNormalization '{}' has no scale, as torch exports LayerNorm(elementwise_affine="
                         "False) at opset 17: export with opset_version=13, or with elementwise_affine=True)",
                         n.name());
  if (file_batch > 0 && file_batch != batch)
    return fmt::format(" (the file was exported for batch {}: a batch fixed at export, as x.view(x.size(0), -1) "
                       "makes it, fails at another; give --batch-size {}, or export with dynamic_axes={{'{}': "
                       "{{0: 'batch'}}}})",
                       file_batch, file_batch, input);
  return "";
}

}  // namespace

::onnx::ModelProto checked_with_shapes(const ::onnx::ModelProto& model, const std::string& input, int batch,
                                       const std::string& path) {
  ::onnx::ModelProto m = model;
  ::onnx::GraphProto& g = *m.mutable_graph();
  // Shapes the exporter recorded for its own batch would contradict the new batch.
  g.clear_value_info();
  std::int64_t file_batch = 0;  // the batch the file was exported for; 0 if symbolic
  for (auto& v : *g.mutable_input()) {
    if (v.name() != input || !v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
    auto* shape = v.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() == 0) continue;
    file_batch = shape->dim(0).dim_value();
    shape->mutable_dim(0)->set_dim_value(batch);
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
  // The checker's own words ("Your model ir_version is higher than the checker's") say
  // neither which versions nor what to do.
  if (m.ir_version() > ::onnx::IR_VERSION)
    throw InputError(fmt::format("'{}' is ONNX IR version {}; this poet reads up to version {}; export it again with an "
                                 "older exporter (or opset_version), or convert it with "
                                 "onnx.version_converter.convert_version",
                                 path, m.ir_version(), static_cast<int>(::onnx::IR_VERSION)));
  check_every_input_defined(g, path);
  try {
    ::onnx::checker::check_model(m);
    ::onnx::shape_inference::InferShapes(m, ::onnx::OpSchemaRegistry::Instance(),
                                         ::onnx::ShapeInferenceOptions(/*check_type=*/true, /*error_mode=*/1));
  } catch (const std::exception& e) {
    throw InputError(fmt::format("'{}' is not a valid ONNX model: {}{}", path, one_line_of(e.what()),
                                 likely_cause(m, input, file_batch, batch)));
  }
  return m;
}

}  // namespace poet::onnx_import
