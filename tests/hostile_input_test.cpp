// Hostile inputs (issue 12): each must fail with InputError naming the file and the field,
// never crash, exhaust the stack or memory, or pass a library's raw message through.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "poet/backward/backward.h"
#include "poet/cost/device.h"
#include "poet/graph/graph_json.h"
#include "poet/paging/file_pager.h"
#include "poet/runtime/executor.h"
#include "poet/schedule/schedule.h"
#include "poet/util/error.h"
#include "poet/util/input_file.h"
#include "poet/util/json_file.h"
#include "poet/util/units.h"
#include "test_scale.h"

namespace poet {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class HostileInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("poet_hostile_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // lenet5's training graph as JSON, to be spoiled one field at a time.
  static json lenet5() {
    static const json j = graph_to_json(build_model_training_graph("lenet5", {}, BackwardMode::Autodiff));
    return j;
  }

  // Loads `j` as a graph file and returns the error's message (empty if it was accepted).
  std::string graph_error(const json& j) {
    const std::string path = write("g.json", j.dump());
    try {
      load_graph(path);
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("graph '" + path + "'"), std::string::npos) << "the message names the file: " << what;
      EXPECT_EQ(what.find("json.exception"), std::string::npos) << what;
      return what;
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(HostileInput, AGraphOfAHundredThousandForwardEdgesIsACycleNotACrash) {
  json nodes = json::array();
  // Deep enough to overflow a recursive search (100,000 normally, 10,000 in the sanitizer pass).
  const int n = testing::test_cases(100000, 10);
  for (int i = 0; i < n; ++i)
    nodes.push_back({{"name", "n" + std::to_string(i)}, {"op", "relu"}, {"role", "forward"}, {"shape", {1}},
                     {"flops", 1}, {"inputs", i + 1 < n ? json::array({i + 1}) : json::array()}});
  const std::string what = graph_error({{"format", "poet-graph"}, {"version", 1}, {"name", "fwd"}, {"nodes", nodes}});
  EXPECT_NE(what.find("comes after it"), std::string::npos) << what;
}

TEST_F(HostileInput, DeepNestingIsRefusedWhileParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::string text = lenet5().dump();
  text.replace(text.find("\"relu\""), 6, deep);
  const std::string path = write("deep.json", text);
  try {
    load_graph(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nest more than 32 levels"), std::string::npos) << e.what();
  }
}

TEST_F(HostileInput, SizesBeyondTheLimitsNameTheNodeAndTheLimit) {
  const auto spoil = [&](int node, const char* key, const json& value) {
    json j = lenet5();
    j["nodes"][node][key] = value;
    return graph_error(j);
  };
  EXPECT_NE(spoil(5, "bytes", std::int64_t{1} << 62).find("bytes is 4611686018427387904; it must be 0 to"),
            std::string::npos);
  EXPECT_NE(spoil(5, "element_bytes", (std::int64_t{1} << 32) + 4).find("\"element_bytes\" is 4294967300; it must be 1 to 16"),
            std::string::npos);
  EXPECT_NE(spoil(3, "param_count", std::int64_t{1} << 61).find("param_count is 2305843009213693952"), std::string::npos);
  json shape = json::array({std::int64_t{1} << 31, std::int64_t{1} << 31, std::int64_t{1} << 31});
  json j = lenet5();
  j["nodes"][5]["shape"] = shape;
  j["nodes"][5].erase("bytes");
  EXPECT_NE(graph_error(j).find("holds more than"), std::string::npos);
  EXPECT_NE(spoil(5, "flops", 1e300).find("flops is 1e+300; it must be >= 0 and at most 1e+21"), std::string::npos);
  EXPECT_NE(spoil(2, "name", 5).find("\"name\" must be a string, not 5"), std::string::npos);
  EXPECT_NE(spoil(5, "inputs", json::array({4, 4, 4, 4, 4})).find("lists input 4 5 times"), std::string::npos);
  json many = json::array();
  for (int k = 0; k < 100000; ++k) many.push_back(4);
  EXPECT_NE(spoil(5, "inputs", many).find("\"inputs\" has 100000 entries; at most 256"), std::string::npos);
}

TEST_F(HostileInput, AGradientSlotOfTwoToTheSixtyFourIsOutOfRange) {
  json j = lenet5();
  for (auto& n : j["nodes"])
    if (n.contains("grad")) {
      n["grad"]["slot"] = std::numeric_limits<std::uint64_t>::max();
      break;
    }
  EXPECT_NE(graph_error(j).find("\"grad.slot\" is 18446744073709551615; it must be -1 to 255"), std::string::npos);
}

// A shape its inputs do not make loads (planning counts its bytes as given), but the runtime
// refuses it: its kernels would run past their tensors (an internal error in profile; the
// firmware's header was written). An element-wise node, a convolution and a pool.
TEST_F(HostileInput, ShapesTheirInputsDoNotMakeAreRefusedBeforeAKernelRuns) {
  const auto runtime_error = [&](const std::string& node, std::size_t dim, std::int64_t delta) {
    json j = lenet5();
    for (auto& n : j["nodes"])
      if (n["name"] == node) {
        n["shape"][dim] = n["shape"][dim].get<std::int64_t>() + delta;
        n.erase("bytes");
      }
    const Graph g = load_graph(write("g.json", j.dump()));
    try {
      runtime::check_trainable(g);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(runtime_error("relu1", 1, -3).find("node 'relu1' (2) of op 'relu': its shape is 1x3x28x28, but its inputs "
                                              "make 1x6x28x28"),
            std::string::npos)
      << runtime_error("relu1", 1, -3);
  EXPECT_NE(runtime_error("conv1", 2, 2).find("of op 'conv2d': its shape is 1x6x30x28"), std::string::npos);
  EXPECT_NE(runtime_error("pool1", 3, 1).find("of op 'max_pool2d': its shape is"), std::string::npos);
  EXPECT_EQ(runtime_error("no such node", 0, 0), "accepted");
}

TEST_F(HostileInput, ErrorsNameTheFileNotTheGraphsOwnName) {
  json j = lenet5();
  j["name"] = "internal-name";
  for (auto& n : j["nodes"])
    if (n["role"] == "loss") n["role"] = "forward";  // Graph::validate's check, after the nodes are read
  const std::string what = graph_error(j);
  EXPECT_NE(what.find("has 0 loss nodes"), std::string::npos) << what;
  EXPECT_EQ(what.find("internal-name"), std::string::npos) << what;
}

TEST_F(HostileInput, NumbersBeyondADoubleAndFoldersAreRefusedInPlainWords) {
  std::string text = lenet5().dump();
  text.replace(text.find("\"flops\":") + 8, 1, "1e400,\"x\":0");
  try {
    load_graph(write("big.json", text));
    FAIL();
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("numbers must be finite"), std::string::npos) << what;
    EXPECT_EQ(what.find("json.exception"), std::string::npos) << what;
  }
  try {
    load_graph(dir_.string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("it is a folder"), std::string::npos) << e.what();
  }
}

// The depth is counted by a scan of the brackets before parsing: brackets inside strings,
// after escaped quotes, do not count; 32 levels are read, 33 refused.
TEST(HostileJson, TheDepthLimitCountsBracketsOutsideStringsOnly) {
  const auto nested = [](int levels, const std::string& inner) {
    return std::string(static_cast<std::size_t>(levels), '[') + inner + std::string(static_cast<std::size_t>(levels), ']');
  };
  EXPECT_NO_THROW(parse_json(nested(kMaxJsonDepth, "1"), "test", "t"));
  EXPECT_THROW(parse_json(nested(kMaxJsonDepth + 1, "1"), "test", "t"), InputError);
  const std::string brackets_in_strings = "\"" + std::string(100, '[') + "\\\"{{{{\"";
  const json parsed = parse_json(nested(kMaxJsonDepth, brackets_in_strings), "test", "t");
  json inner = parsed;
  for (int level = 0; level < kMaxJsonDepth; ++level) inner = json(inner[0]);
  EXPECT_EQ(inner.get<std::string>(), std::string(100, '[') + "\"{{{{");
  EXPECT_THROW(parse_json(R"({"a": [1, 2})", "test", "t"), InputError);  // unbalanced: the parser's error
}

TEST_F(HostileInput, AScheduleIsBoundedByItsGraphBeforeItIsBuilt) {
  const Graph g = build_model_training_graph("lenet5", {}, BackwardMode::Autodiff);
  const std::string huge = write(
      "s.json", R"({"format":"poet-schedule","version":1,"stages":10000000,"R":[],"S_ram":[],"S_aux":[],"M_in":[],"M_out":[]})");
  try {
    load_schedule(huge, g);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has 10000000 stages but graph"), std::string::npos) << e.what();
  }
  // Without the graph, the rows the file holds bound what is built.
  EXPECT_THROW(schedule_from_json(json::parse(R"({"format":"poet-schedule","version":1,"stages":10000000,"R":[],
                                   "S_ram":[],"S_aux":[],"M_in":[],"M_out":[]})"),
                                  "s.json"),
               InputError);
}

TEST_F(HostileInput, ADeeplyNestedScheduleRowIsRefused) {
  const Graph g = build_model_training_graph("lenet5", {}, BackwardMode::Autodiff);
  std::string text = schedule_to_json(Schedule(g.size())).dump();
  text.replace(text.find("\"R\":[[]") + 5, 2, std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_THROW(load_schedule(write("deep.json", text), g), InputError);
}

TEST_F(HostileInput, DeviceProfileTextFieldsOfTheWrongTypeNameTheField) {
  json d = device_to_json(builtin_platform("m4"));
  d["description"] = 5;
  const std::string path = write("d.json", d.dump());
  try {
    load_device(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"description\" must be a string, not 5"), std::string::npos) << e.what();
  }
}

TEST(HostileNumbers, BudgetsAndPercentsAreParsedStrictly) {
  for (const char* bad : {"70%%", "70abc%", "0x10%", "inf%", "nan%", "1e30%", "-5%", "%", "0%", "1e400%"})
    EXPECT_THROW(parse_percent(bad, "--ram-budget"), InputError) << bad;
  EXPECT_EQ(parse_percent("70%", "--ram-budget"), 70);
  EXPECT_EQ(parse_percent("2.5e1%", "--ram-budget"), 25);
  for (const char* bad : {"0x10", "inf", "1e30", "12abc", "9e18", "nan"})
    EXPECT_THROW(parse_bytes(bad, "--ram-budget"), InputError) << bad;
  EXPECT_FALSE(parse_decimal("0x10"));
  EXPECT_FALSE(parse_decimal("inf"));
  EXPECT_FALSE(parse_decimal("70abc"));
  EXPECT_FALSE(parse_decimal(""));
  EXPECT_EQ(parse_decimal("1e6"), 1e6);
}

TEST(HostileFiles, AMissingFileAndAFolderAreInputErrors) {
  EXPECT_THROW(read_input_file("/nonexistent/x", "plan"), InputError);
  EXPECT_THROW(read_input_file(fs::temp_directory_path().string(), "plan"), InputError);
  const std::string path = (fs::temp_directory_path() / "poet_hostile_small.txt").string();
  std::ofstream(path) << "0123456789";
  EXPECT_THROW(read_input_file(path, "plan", 5), InputError);
  EXPECT_EQ(read_input_file(path, "plan"), "0123456789");
  fs::remove(path);
}

TEST(HostileFiles, APageFileInAFolderThatTakesNoFilesSaysSo) {
  try {
    FilePagerOptions options;
    options.path = "/proc/poet-page-file";
    FilePager pager(options);
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("the folder '/proc' does not take new files"), std::string::npos) << e.what();
  }
}

// poet train checks --page-file before planning (poet profile its --page-dir before
// measuring), with an InputError (exit 2) that tells a virtual folder from a missing one.
TEST(HostileFiles, APageFileLocationIsCheckedBeforePlanning) {
  const auto error_of = [](const std::string& requested, std::string_view option = "--page-file") {
    try {
      check_page_file_location(requested, option);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string proc = error_of("/proc/x");
  EXPECT_NE(proc.find("--page-file '/proc/x': the folder '/proc' takes no new files (a virtual file system such as /proc)"),
            std::string::npos)
      << proc;
  EXPECT_EQ(proc.find("does not exist"), std::string::npos) << proc;
  const std::string proc_folder = error_of("/proc", "--page-dir");
  EXPECT_NE(proc_folder.find("--page-dir '/proc': the folder '/proc' takes no new files"),
            std::string::npos)
      << proc_folder;
  EXPECT_NE(proc_folder.find("choose a writable folder on real storage for --page-dir"), std::string::npos)
      << proc_folder;
  EXPECT_NE(error_of("/nonexistent-poet-folder/x").find("the folder '/nonexistent-poet-folder' does not exist"),
            std::string::npos);
  const fs::path file = fs::temp_directory_path() / "poet_hostile_page_parent";
  std::ofstream(file) << "x";
  EXPECT_NE(error_of((file / "x").string()).find("is not a folder"), std::string::npos);
  fs::remove(file);
  const fs::path folder = fs::temp_directory_path() / "poet_hostile_page_folder";
  fs::create_directories(folder);
  EXPECT_EQ(error_of(folder.string()), "");
  EXPECT_EQ(error_of((folder / "pages").string()), "");
  EXPECT_TRUE(fs::is_empty(folder)) << "the probe file was left behind";
  // A file of the user's (or a device) at that name is refused now, as the page file's
  // creation would refuse it after planning; a fresh name is not.
  std::ofstream(folder / "notes.txt") << "mine";
  EXPECT_NE(error_of((folder / "notes.txt").string()).find("a file of that name exists"), std::string::npos);
  EXPECT_NE(error_of("/dev/null").find("a file of that name exists"), std::string::npos);
  fs::remove_all(folder);
}

}  // namespace
}  // namespace poet
