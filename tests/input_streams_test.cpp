// Inputs that are streams (a pipe, a device) have no size to check before they are read: a
// wrong one must be refused at its first bytes, not after poet's 1 GiB cap (which took 2 GiB
// of memory and seconds for `--graph /dev/zero`).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "hand_graph.h"
#include "poet/onnx/onnx_import.h"
#include "poet/plan/device_format.h"
#include "poet/plan/plan.h"
#include "poet/train/checkpoint_file.h"
#include "poet/util/error.h"
#include "poet/util/input_file.h"
#include "poet/util/json_file.h"

namespace poet {
namespace {

// The message `read` throws as InputError; "" if it returns.
template <class Read>
std::string refusal(Read&& read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool holds(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

TEST(InputStreams, AnInspectorSeesEachPieceAndCanStopAnEndlessStream) {
  int pieces = 0;
  const std::string why = refusal([&] {
    read_input_file("/dev/zero", "test input", kMaxInputFileBytes, [&](std::string_view piece) {
      EXPECT_EQ(piece.size(), std::size_t{1} << 16);
      if (++pieces == 3) throw InputError("enough");
    });
  });
  EXPECT_EQ(why, "enough");
  EXPECT_EQ(pieces, 3);
}

// nlohmann keeps the last of two equal keys: a hand-edited file's second "name" won without a word.
TEST(InputStreams, AKeyTwiceInOneObjectIsRefusedWithWhereItIs) {
  EXPECT_EQ(refusal([] { parse_json(R"({"a": 1, "a": 2})", "graph", "g.json"); }),
            "graph 'g.json' has the key \"a\" twice in one object, of which poet would read only the last; keep one");
  const std::string nested = refusal([] {
    parse_json(R"({"nodes": [{"name": "x", "cost": {"t": 1}}, {"name": "y", "cost": {"t": 1, "t": 2}}]})", "graph",
               "g.json");
  });
  EXPECT_TRUE(holds(nested, "has the key \"t\" twice in one object (in \"cost\")")) << nested;
  const std::string in_array = refusal([] { parse_json(R"({"nodes": [{"a": 1}, {"b": 1, "b": 1}]})", "graph", "g"); });
  EXPECT_TRUE(holds(in_array, "has the key \"b\" twice in one object (in \"nodes\")")) << in_array;
  // The same key in two objects is no duplicate.
  EXPECT_EQ(parse_json(R"([{"a": 1}, {"a": 2}])", "graph", "g")[1]["a"], 2);
}

// Text saved as UTF-16 by Windows tools was called a binary file for its NULs.
TEST(InputStreams, TextSavedAsUtf16IsNamedAsSuch) {
  const std::string path = ::testing::TempDir() + "/poet_utf16_" + std::to_string(::getpid());
  for (const std::string_view bytes : {std::string_view("\xff\xfe{\0}\0", 6), std::string_view("{\0}\0", 4),
                                       std::string_view("\0{\0}", 4)}) {
    std::ofstream(path, std::ios::binary) << bytes;
    const std::string json = refusal([&] { read_json_file(path, "graph"); });
    EXPECT_TRUE(holds(json, "is not valid JSON: it is encoded as UTF-16")) << json;
  }
  for (const std::string_view bytes : {std::string_view("\xff\xfe" "c\0o\0", 6), std::string_view("c\0o\0", 4)}) {
    std::ofstream(path, std::ios::binary) << bytes;
    const std::string plan = refusal([&] { load_plan_text(path, testing::hand_graph()); });
    EXPECT_TRUE(holds(plan, "' is encoded as UTF-16")) << plan;
  }
  std::filesystem::remove(path);
  EXPECT_EQ(utf16_problem(std::string_view("\0\0\0", 3)), std::nullopt);  // zeros: a binary file
  EXPECT_EQ(utf16_problem("{}"), std::nullopt);
}

TEST(InputStreams, EachFormatRefusesAStreamOfZerosAtItsFirstBytes) {
  const std::string json = refusal([] { read_json_file("/dev/zero", "graph"); });
  EXPECT_TRUE(holds(json, "graph '/dev/zero' is not valid JSON: it holds a NUL byte (at byte 0)")) << json;
  const std::string plan = refusal([] { load_plan_text("/dev/zero", testing::hand_graph()); });
  EXPECT_TRUE(holds(plan, "plan '/dev/zero' holds a NUL byte (at byte 0)")) << plan;
  const std::string checkpoint = refusal([] { train::load_checkpoint("/dev/zero"); });
  EXPECT_TRUE(holds(checkpoint, "no POETCKPT header")) << checkpoint;
  const std::string device_plan = refusal([] { load_device_plan("/dev/zero"); });
  EXPECT_TRUE(holds(device_plan, "begins neither with \"POET\"")) << device_plan;
  const std::string onnx = refusal([] { import_onnx("/dev/zero"); });
  EXPECT_TRUE(holds(onnx, "is not an ONNX model")) << onnx;
}

class JsonText : public ::testing::Test {
 protected:
  std::string refusal_of(std::string_view text) {
    {
      std::ofstream out(path_, std::ios::binary);
      out << text;
    }
    const std::string from_file = refusal([&] { read_json_file(path_.string(), "schedule"); });
    // Text in memory is judged as a file's is.
    const std::string from_memory = refusal([&] { parse_json(text, "schedule", path_.string()); });
    EXPECT_EQ(from_file, from_memory);
    return from_file;
  }
  ~JsonText() override { std::filesystem::remove(path_); }

  std::filesystem::path path_ =
      std::filesystem::temp_directory_path() / ("poet-json-text-" + std::to_string(::getpid()) + ".json");
};

TEST_F(JsonText, WhatNoJsonBeginsWithIsRefusedByItsFirstCharacter) {
  EXPECT_TRUE(holds(refusal_of("y\ny\ny\n"), "it begins with 'y', and JSON text begins with '{'"));
  EXPECT_TRUE(holds(refusal_of("  ]"), "it begins with ']'"));
  EXPECT_TRUE(holds(refusal_of("\x1b[31m{}"), "it begins with '\\x1b'"));
  // What JSON may begin with is left to the parser: a scalar, a string, a byte-order mark.
  EXPECT_FALSE(holds(refusal_of("42"), "it begins with"));
  EXPECT_FALSE(holds(refusal_of("\xEF\xBB\xBF{}"), "it begins with"));
  EXPECT_EQ(refusal_of(" {\"a\": [1, \"}]\"]}\n"), "");
}

TEST_F(JsonText, TextAfterTheOutermostValueAndNulBytesAreRefused) {
  EXPECT_TRUE(holds(refusal_of("{\"a\": 1}\n{\"b\": 2}"), "text goes on after its outermost value ends (at byte 9)"));
  EXPECT_TRUE(holds(refusal_of(std::string("{\"a\": 1}\0", 9)), "NUL byte (at byte 8)"));
  EXPECT_TRUE(holds(refusal_of(std::string("{\"a\": \"x\0\"}", 11)), "NUL byte (at byte 8)"));
}

}  // namespace
}  // namespace poet
