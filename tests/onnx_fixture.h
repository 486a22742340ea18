// The ONNX files the tests import, in tests/data/onnx.
#pragma once

#include <string>

#include "poet/backward/backward.h"
#include "poet/onnx/onnx_import.h"

namespace poet::testing {

inline std::string onnx_fixture(const std::string& name) { return std::string(POET_TEST_DATA_DIR) + "/onnx/" + name; }

// A stem and one residual block (bench/mini_resnet.py --blocks 1) at batch 8: a ResNet small
// enough for CBC, where the solver's starts still leave a gap.
inline Graph mini_resnet1_training_graph() {
  OnnxImportOptions import;
  import.batch_size = 8;
  return build_training_graph(import_onnx(onnx_fixture("mini_resnet1.onnx"), import).forward, BackwardMode::Autodiff);
}

}  // namespace poet::testing
