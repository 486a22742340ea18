// Graph and device-profile files: exact round trips, and bad files rejected with messages
// that name the file, the node or field, and the fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "poet/backward/backward.h"
#include "poet/cost/device.h"
#include "poet/cost/graph_costs_json.h"
#include "poet/graph/graph_json.h"
#include "poet/onnx/onnx_import.h"
#include "poet/util/error.h"
#include "poet/util/json_file.h"
#include "onnx_fixture.h"

namespace poet {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) { return (fs::temp_directory_path() / ("poet_test_" + name)).string(); }

void expect_same(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.name(), b.name());
  for (NodeId v = 0; v < static_cast<NodeId>(a.size()); ++v) {
    const Node &x = a.node(v), &y = b.node(v);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.role, y.role);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.flops, y.flops);  // exactly: JSON keeps every digit
    EXPECT_EQ(x.param_count, y.param_count);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.attrs, y.attrs);
    EXPECT_EQ(x.grad, y.grad);
  }
}

TEST(GraphJson, ZooGraphsRoundTripExactly) {
  for (const auto& model : {"resnet18_cifar", "transformer", "mobilenet_v2"}) {
    for (const auto mode : {BackwardMode::Autodiff, BackwardMode::Chain}) {
      const Graph g = build_model_training_graph(model, {.batch_size = 1}, mode);
      const std::string path = temp_path("graph.json");
      const GraphCosts costs = estimate_costs(g, builtin_platform("m4"));
      save_graph_with_costs(g, costs, path);
      expect_same(g, load_graph(path));
      fs::remove(path);
    }
  }
}

// An audio CNN's strides differ between the axes (tests/data/onnx/tiny_spectrogram.onnx): a
// file carries them as stride_h and stride_w, and one "stride" where they agree.
TEST(GraphJson, StridesThatDifferPerAxisRoundTrip) {
  const OnnxModel m = import_onnx(testing::onnx_fixture("tiny_spectrogram.onnx"), {.batch_size = 2});
  const nlohmann::json forward = graph_to_json(m.forward);
  int per_axis = 0;
  for (const auto& node : forward["nodes"]) {
    const nlohmann::json a = node.value("attrs", nlohmann::json::object());
    if (a.contains("stride_h")) {
      EXPECT_FALSE(a.contains("stride")) << node["name"];
      EXPECT_NE(a["stride_h"], a["stride_w"]) << node["name"];
      ++per_axis;
    }
  }
  EXPECT_EQ(per_axis, 6);  // the four convolutions and both poolings
  const Graph g = build_training_graph(m.forward, BackwardMode::Autodiff);
  expect_same(g, graph_from_json(graph_to_json(g), "tiny_spectrogram"));
}

// An autoencoder's loss reads two nodes, the output and the input it reconstructs.
TEST(GraphJson, ReconstructionLossRoundTrips) {
  const OnnxModel m = import_onnx(testing::onnx_fixture("tiny_autoencoder.onnx"),
                                  {.batch_size = 2, .loss = TrainingLoss::reconstruction});
  const Graph g = build_training_graph(m.forward, BackwardMode::Autodiff);
  const Node& loss = g.node(g.loss());
  EXPECT_EQ(loss.op, OpKind::MeanSquaredError);
  EXPECT_EQ(loss.shape, (Shape{2, 64}));
  EXPECT_EQ(loss.inputs.back(), 0);  // the input
  expect_same(g, graph_from_json(graph_to_json(g), "tiny_autoencoder"));
  // A classifier's logits do not reconstruct its input: the error says what would.
  try {
    import_onnx(testing::onnx_fixture("tiny_cnn.onnx"), {.batch_size = 2, .loss = TrainingLoss::reconstruction});
    ADD_FAILURE() << "a classifier imported as an autoencoder";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a reconstruction has the input's values"), std::string::npos) << e.what();
  }
}

TEST(GraphJson, WithCostsEveryNodeCarriesItsCostsOnTheDevice) {
  const Graph g = build_model_training_graph("lenet5", {.batch_size = 1}, BackwardMode::Autodiff);
  const GraphCosts costs = estimate_costs(g, builtin_platform("m4"));
  const nlohmann::json j = graph_with_costs_to_json(g, costs);
  ASSERT_EQ(j["nodes"].size(), g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(j["nodes"][i]["cost"]["compute_energy_j"].get<double>(), costs.nodes[i].compute_energy_j);
    EXPECT_EQ(j["nodes"][i]["cost"]["pagein_time_s"].get<double>(), costs.nodes[i].pagein_time_s);
  }
  EXPECT_FALSE(graph_to_json(g)["nodes"][0].contains("cost"));
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(GraphJson, RejectsEveryFileInTheBadGraphsFolder) {
  // expected.json: each file and the text its error must contain.
  const auto expected = nlohmann::json::parse(read_text(POET_TEST_DATA_DIR "/bad_graphs/expected.json"))["expect"];
  int checked = 0;
  for (const auto& e : fs::directory_iterator(POET_TEST_DATA_DIR "/bad_graphs")) {
    const std::string file = e.path().filename().string();
    if (e.path().extension() != ".json" || file == "expected.json") continue;
    ASSERT_TRUE(expected.contains(file)) << file << " has no expected error in expected.json";
    const auto expect = expected[file].get<std::string>();
    try {
      load_graph(e.path().string());
      ADD_FAILURE() << e.path() << " was accepted";
    } catch (const InputError& err) {
      EXPECT_NE(std::string(err.what()).find(expect), std::string::npos) << e.path() << ": " << err.what();
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(expected.size()));
  EXPECT_EQ(checked, 12);
}

TEST(GraphJson, MalformedJsonNamesTheFileAndPosition) {
  const std::string path = POET_TEST_DATA_DIR "/bad_graphs/malformed.json.txt";
  try {
    load_graph(path);
    FAIL();
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("graph '" + path + "' is not valid JSON"), std::string::npos) << what;
    EXPECT_NE(what.find("line 3"), std::string::npos) << what;
  }
  EXPECT_THROW(load_graph("/nonexistent/graph.json"), InputError);
}

TEST(GraphJson, AnEmptyFileIsSaidToBeEmpty) {
  for (const std::string_view text : {"", " \n\t\r\n"}) {
    try {
      parse_json(text, "graph", "g.json");
      ADD_FAILURE() << "an empty text was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("graph 'g.json' is not valid JSON: it is empty"), std::string::npos)
          << e.what();
    }
  }
}

TEST(GraphJson, SavingToAMissingFolderFailsCleanly) {
  const Graph g = build_model_training_graph("lenet5", {}, BackwardMode::Autodiff);
  EXPECT_THROW(save_graph(g, "/nonexistent-folder/g.json"), IoError);
}

TEST(DeviceJson, BuiltinsRoundTripAndValidate) {
  for (const auto& d : builtin_platforms()) {
    SCOPED_TRACE(d.name);
    d.validate();
    const std::string path = temp_path(d.name + ".json");
    save_device(d, path);
    const DeviceProfile back = load_device(path);
    EXPECT_EQ(back.name, d.name);
    EXPECT_EQ(back.flops_per_second, d.flops_per_second);
    EXPECT_EQ(back.flops_per_joule, d.flops_per_joule);
    EXPECT_EQ(back.pagein_latency_s, d.pagein_latency_s);
    EXPECT_EQ(back.pagein_bytes_per_s, d.pagein_bytes_per_s);
    EXPECT_EQ(back.pageout_latency_s, d.pageout_latency_s);
    EXPECT_EQ(back.pageout_bytes_per_s, d.pageout_bytes_per_s);
    EXPECT_EQ(back.memory_power_w, d.memory_power_w);
    EXPECT_EQ(back.sources, d.sources);
    EXPECT_EQ(resolve_device(path).name, d.name);
    fs::remove(path);
  }
}

TEST(DeviceJson, RejectsEveryFileInTheBadDevicesFolder) {
  // expected.json: each file and the text its error must contain (a profile's own "expect"
  // field would be refused as unknown).
  const auto expected = nlohmann::json::parse(read_text(POET_TEST_DATA_DIR "/bad_devices/expected.json"))["expect"];
  int checked = 0;
  for (const auto& e : fs::directory_iterator(POET_TEST_DATA_DIR "/bad_devices")) {
    const std::string file = e.path().filename().string();
    if (file == "expected.json") continue;
    ASSERT_TRUE(expected.contains(file)) << file << " has no expected error in expected.json";
    const auto expect = expected[file].get<std::string>();
    try {
      load_device(e.path().string());
      ADD_FAILURE() << e.path() << " was accepted";
    } catch (const InputError& err) {
      const std::string what = err.what();
      EXPECT_NE(what.find("profile '" + e.path().string() + "': " + expect), std::string::npos) << what;
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(expected.size()));
  EXPECT_EQ(checked, 12);
}

TEST(DeviceJson, UnknownPlatformListsTheValidOnes) {
  const auto refusal = [](const std::string& platform) {
    try {
      resolve_device(platform);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal("pi5"),
            "unknown platform 'pi5': expected one of m0, m4, a72, a72nocache, jetsontx2, or a path to a device "
            "profile JSON file");
  // A path was meant: the file is missing, not the platform unknown.
  EXPECT_EQ(refusal("profiles/pi5.json"),
            "device profile 'profiles/pi5.json' does not exist; give the path of a profile file (poet profile "
            "writes one), or a built-in platform: m0, m4, a72, a72nocache, jetsontx2");
}

}  // namespace
}  // namespace poet
