// Small hostile ONNX files: each is refused with the node and the reason, never a crash or
// gigabytes of memory for a file of a few hundred bytes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnx_builder.h"

namespace poet {
namespace {

using namespace testing::onnx_builder;

// ConstantOfShape held each dimension to 2^20 but not their product: [65536]^4 is 2^64
// elements, 0 once wrapped, and the Slice after it read past the end (a segfault); [30000,
// 30000] took 3.5 GB before failing. Folded constants are held to 2^24 elements.
TEST(OnnxHostile, AConstantOfShapeBeyondWhatPoetFoldsIsNamed) {
  for (const std::vector<std::int64_t>& dims : {std::vector<std::int64_t>{65536, 65536, 65536, 65536},
                                                std::vector<std::int64_t>{30000, 30000}}) {
    const std::vector<std::int64_t> zeros(dims.size(), 0), ones(dims.size(), 1);
    const std::string path = write_model("constant_of_shape", {1, 4}, {1, 4}, [&](auto& g) {
      add_int64_initializer(g, "shape", dims);
      add_int64_initializer(g, "starts", zeros);
      add_int64_initializer(g, "ends", ones);
      add_int64_initializer(g, "one", {1});
      add_node(g, "sevens", "ConstantOfShape", {"shape"}, "c");
      add_node(g, "corner", "Slice", {"c", "starts", "ends"}, "corner");
      add_node(g, "flat", "Reshape", {"corner", "one"}, "seven");
      add_node(g, "plus_seven", "Add", {"x", "seven"}, "y");
    });
    const std::string message = import_error(path);
    EXPECT_NE(message.find("'sevens'"), std::string::npos) << message;
    EXPECT_NE(message.find("more than 2^24 elements"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace poet
