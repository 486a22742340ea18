// The ONNX files the tests import, in tests/data/onnx.
#pragma once

#include <string>

namespace poet::testing {

inline std::string onnx_fixture(const std::string& name) { return std::string(POET_TEST_DATA_DIR) + "/onnx/" + name; }

}  // namespace poet::testing
