// Bring your own model: an ONNX file (what torch.onnx.export and every other framework
// write) read into a forward graph like the zoo's, with its weights in poet's parameter
// layout, and the trained weights written back into the same model.
//
// Each ONNX node becomes a node of an existing operator (poet/graph/op_table.h), made by
// that operator's rules: the importer picks the operator and its attributes and never
// computes a shape, FLOPs or bytes itself. Constant sub-graphs (the Shape / Gather /
// Unsqueeze / Concat chains torch emits for a reshape, Constant, Identity, Swin's masks)
// are folded away.
// docs/ONNX.md lists the operators and the attributes each takes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "poet/graph/graph.h"

namespace poet {

// What the model's output is trained by: cross-entropy against each sample's label (the
// output: [batch, classes] logits), or the mean squared error of a reconstruction against the
// input itself (an autoencoder's: as many values per sample as the input).
enum class TrainingLoss { cross_entropy, reconstruction };

struct OnnxImportOptions {
  int batch_size = 1;  // the batch dimension of the model's input, whatever the file says
  TrainingLoss loss = TrainingLoss::cross_entropy;
};

// One initializer's share of a node's parameters.
struct InitializerPiece {
  std::string initializer;  // its name in the file; empty: a fixed tensor the file computes (not written back)
  std::int64_t offset = 0;  // in floats, into the node's parameters
  std::int64_t count = 0;
  // A MatMul weight is stored [in, out] in the file and [out, in] in poet's layout: its
  // rows and columns as the file stores them; 0: stored as poet lays it out.
  std::int64_t file_rows = 0, file_cols = 0;
};

// The parameters of one forward node, in poet's layout (runtime/parameters.h):
//   linear      weight [out, in], then bias [out] when it has one
//   conv2d      weight [out, in / groups, kh, kw], then bias [out] when it has one
//   batch_norm  gamma [C], beta [C], running mean [C], running variance [C]
//   layer_norm  gamma [F], beta [F]
struct ImportedParameters {
  std::string node;           // the forward node's name, which the training graph keeps
  std::vector<float> values;  // the node's param_count floats; empty in a structure-only file
  std::vector<InitializerPiece> pieces;
};

struct OnnxModel {
  std::string path;
  Graph forward;  // the input through the loss (softmax cross-entropy on the model's output)
  std::vector<ImportedParameters> parameters;
  // False for a structure-only file (initializers with dimensions but no data): enough to
  // plan, not to fine-tune.
  bool has_weights = true;
  int onnx_nodes = 0;    // nodes in the file
  int folded_nodes = 0;  // of them, constant computations folded away (or identities)
  std::int64_t opset = 0;
  // The model's bytes with its weights inside (external data read in): about what
  // export_onnx writes.
  std::uint64_t bytes = 0;
  // What the user should know of a file that imports, but likely not as meant (batch norms
  // folded away by an eval-mode export); commands print each as a note.
  std::vector<std::string> notes;
};

// Reads, checks (the ONNX checker and shape inference) and imports `path`. Throws
// InputError naming the file, and the node and operator where one is to blame, for a file
// that is not an ONNX model, is damaged, or uses an operator or attribute poet lacks (the
// message lists the supported operators).
OnnxModel import_onnx(const std::string& path, const OnnxImportOptions& options = {});

// The files beside `path` that hold its weights (ONNX's external data), each once: inputs
// a command's outputs must not replace. Throws InputError, as import_onnx, for a file that
// is not an ONNX model.
std::vector<std::string> onnx_external_data_files(const std::string& path);

// "Add, AveragePool, ...": the ONNX operators the importer maps, for messages and docs.
std::string onnx_supported_operators();

// Writes the model of `model.path` with `model.parameters`' values in place of its weights
// to `out` (atomically: util/atomic_file.h). Every other part of the file is kept as it
// was. Throws InputError if the source no longer matches the import, IoError if `out`
// cannot be written.
void export_onnx(const OnnxModel& model, const std::string& out);

}  // namespace poet
