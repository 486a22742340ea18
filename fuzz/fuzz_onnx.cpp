// An ONNX model (`--onnx FILE`): imported through the very function the CLI calls, with
// ONNX's checker and shape inference, constant folding and the operator mapping.
#include "fuzz_support.h"
#include "poet/onnx/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = poet::fuzz::scratch_file_with({data, size});
  return poet::fuzz::expect_value_or_input_error([&] { poet::import_onnx(path, {.batch_size = 2}); });
}
