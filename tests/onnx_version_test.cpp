// What an ONNX file says about the format's version, checked before its graph is read.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "onnx_fixture.h"
#include "poet/onnx/onnx_import.h"
#include "poet/util/error.h"

namespace poet {
namespace {

// A model from a newer exporter: the versions and the fix, not the checker's "Your model
// ir_version is higher than the checker's".
TEST(OnnxVersion, ANewerIrVersionNamesTheVersionsAndTheFix) {
  ::onnx::ModelProto m;
  {
    std::ifstream in(testing::onnx_fixture("mini_resnet1.onnx"), std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&in));
  }
  m.set_ir_version(12);
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "poet_onnx_ir12.onnx").string();
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  try {
    import_onnx(path, {.batch_size = 2});
    FAIL() << "an IR version 12 model was imported";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("is ONNX IR version 12; this poet reads up to version 8"), std::string::npos) << message;
    EXPECT_NE(message.find("onnx.version_converter"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace poet
