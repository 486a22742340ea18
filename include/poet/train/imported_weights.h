// An imported model's weights (poet/onnx/onnx_import.h) in the runtime's parameter store,
// and the trained ones back: fine-tuning starts from the file's weights, and export
// writes what training made of them.
#pragma once

#include <vector>

#include "poet/graph/graph.h"
#include "poet/onnx/onnx_import.h"
#include "poet/runtime/parameters.h"

namespace poet::train {

// Copies each node's imported values into its slice of `store` (nodes found by name in
// `g`, the training graph built from the import). InputError if the file had no weights
// (a structure-only model); InternalError if a node is missing or its size differs.
void load_imported_weights(runtime::ParameterStore& store, const Graph& g,
                           const std::vector<ImportedParameters>& parameters);

// The other way: each imported node's values set from its slice of `store`.
void take_trained_weights(const runtime::ParameterStore& store, const Graph& g,
                          std::vector<ImportedParameters>& parameters);

}  // namespace poet::train
