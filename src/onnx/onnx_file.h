// Reading an ONNX file: the protobuf parsed, the model checked by ONNX's checker and its
// shapes inferred for the batch size asked for, every failure an InputError naming the file.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace poet::onnx_import {

// Parses `path`, and reads the initializers whose data ONNX keeps in files beside the
// model (external data) into the model. InputError (naming the path) when it cannot be
// read or is not an ONNX model: not protobuf, truncated, without a graph, or with external
// data outside its folder, missing or cut short.
::onnx::ModelProto read_model_file(const std::string& path);

// The files `path`'s initializers keep their data in (external data), each once, as paths
// beside the model; none read. InputError as read_model_file for a file that is no model.
std::vector<std::string> external_data_files(const std::string& path);

// Runs ONNX's checker and shape inference (strict: a node whose inputs do not fit it is
// an error) on a copy of `model` whose input has batch dimension `batch`, and returns the
// copy with its inferred shapes (value_info). Initializers without data (a structure-only
// file) are checked as typed graph inputs of their dimensions. InputError naming `path`
// and ONNX's reason otherwise.
::onnx::ModelProto checked_with_shapes(const ::onnx::ModelProto& model, const std::string& input, int batch,
                                       const std::string& path);

}  // namespace poet::onnx_import
