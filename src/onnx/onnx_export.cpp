// Writing trained weights back into the model they were imported from: the file is read
// again and only the initializers that hold parameters are replaced, so everything else
// (names, opsets, metadata, the nodes) stays as the exporter wrote it.
#include <fmt/format.h>

#include <cstring>
#include <set>
#include <unordered_map>

#include "onnx_file.h"
#include "poet/onnx/onnx_import.h"
#include "poet/util/atomic_file.h"
#include "poet/util/error.h"

namespace poet {
namespace {

// The tensor named `name`: an initializer, or - for a weight the file shares between
// layers through an Identity of one initializer, which torch emits for equal tensors - a
// new initializer of that name, copied from the shared one, in place of the Identity
// (each layer trained its own copy).
::onnx::TensorProto* find_or_split(::onnx::GraphProto& g, const std::string& name, std::set<int>& dropped) {
  for (auto& t : *g.mutable_initializer())
    if (t.name() == name) return &t;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& node = g.node(i);
    if (node.op_type() != "Identity" || node.output_size() != 1 || node.output(0) != name || node.input_size() != 1)
      continue;
    ::onnx::TensorProto* source = find_or_split(g, node.input(0), dropped);
    if (!source) return nullptr;
    ::onnx::TensorProto copy = *source;
    copy.set_name(name);
    dropped.insert(i);
    *g.add_initializer() = std::move(copy);
    return g.mutable_initializer(g.initializer_size() - 1);
  }
  return nullptr;
}

void write_piece(::onnx::TensorProto& t, const InitializerPiece& piece, const std::vector<float>& values,
                 const std::string& node, const std::string& path) {
  std::int64_t elements = 1;
  for (const std::int64_t d : t.dims()) elements *= d;
  if (t.data_type() != ::onnx::TensorProto::FLOAT || elements != piece.count)
    throw InputError(fmt::format("'{}' has changed since it was imported: initializer '{}' of node '{}' is no longer "
                                 "a float tensor of {} values; export from the file the model was imported from",
                                 path, piece.initializer, node, piece.count));
  std::vector<float> file_order(values.begin() + piece.offset, values.begin() + piece.offset + piece.count);
  if (piece.file_rows > 0)  // poet holds [cols, rows]; the file [rows, cols]
    for (std::int64_t r = 0; r < piece.file_rows; ++r)
      for (std::int64_t c = 0; c < piece.file_cols; ++c)
        file_order[static_cast<std::size_t>(r * piece.file_cols + c)] =
            values[static_cast<std::size_t>(piece.offset + c * piece.file_rows + r)];
  t.clear_float_data();
  std::string raw(file_order.size() * sizeof(float), '\0');
  if (!raw.empty()) std::memcpy(raw.data(), file_order.data(), raw.size());
  t.set_raw_data(std::move(raw));  // ONNX's raw_data is little-endian, as is every host poet runs on
}

}  // namespace

void export_onnx(const OnnxModel& model, const std::string& out) {
  ::onnx::ModelProto m = onnx_import::read_model_file(model.path);
  ::onnx::GraphProto& g = *m.mutable_graph();
  std::set<int> dropped;
  for (const ImportedParameters& p : model.parameters) {
    std::int64_t count = 0;
    for (const InitializerPiece& piece : p.pieces) count += piece.count;
    if (static_cast<std::int64_t>(p.values.size()) != count)
      throw InputError(fmt::format("node '{}' has no weights to export ({} of {} values): '{}' is a structure-only "
                                   "model; import one with its weights",
                                   p.node, p.values.size(), count, model.path));
    for (const InitializerPiece& piece : p.pieces) {
      if (piece.initializer.empty()) continue;  // a fixed tensor the file computes (a mask, indices): not trained
      ::onnx::TensorProto* t = find_or_split(g, piece.initializer, dropped);
      if (!t)
        throw InputError(fmt::format("'{}': the weight '{}' of node '{}' is not an initializer (the file computes "
                                     "it), so poet cannot write it back",
                                     model.path, piece.initializer, p.node));
      write_piece(*t, piece, p.values, p.node, model.path);
    }
  }
  if (!dropped.empty()) {
    google::protobuf::RepeatedPtrField<::onnx::NodeProto> kept;
    for (int i = 0; i < g.node_size(); ++i)
      if (!dropped.count(i)) *kept.Add() = g.node(i);
    g.mutable_node()->Swap(&kept);
  }
  std::string bytes;
  if (!m.SerializeToString(&bytes))
    throw IoError(fmt::format("cannot encode the ONNX model for '{}' (over protobuf's 2 GB limit?)", out));
  write_file_atomically(out, bytes);
}

}  // namespace poet
