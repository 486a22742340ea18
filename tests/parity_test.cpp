// `chain` mode against the reference implementation's own per-node figures, dumped from its
// code into tests/data/reference/poet-graphs (one file per model and platform).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "poet/backward/backward.h"
#include "poet/cost/cost_model.h"

namespace poet {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> reference_files() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(POET_REFERENCE_DIR "/poet-graphs"))
    if (e.path().extension() == ".json" && e.path().filename().string()[0] != '_')
      files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

::testing::AssertionResult close(double ours, double theirs, const std::string& what) {
  const double scale = std::max(std::fabs(ours), std::fabs(theirs));
  if (scale == 0 || std::fabs(ours - theirs) <= 1e-9 * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": ours " << ours << ", reference " << theirs;
}

class Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Parity, ChainModeReproducesEveryNodeAndEdge) {
  std::ifstream in(fs::path(POET_REFERENCE_DIR) / "poet-graphs" / GetParam());
  const auto ref = nlohmann::json::parse(in);
  const Graph g = build_model_training_graph(ref["model"].get<std::string>(),
                                             {.batch_size = ref["batch_size"].get<int>()}, BackwardMode::Chain);
  const GraphCosts costs = estimate_costs(g, builtin_platform(ref["platform"].get<std::string>()));
  const auto& nodes = ref["nodes"];
  ASSERT_EQ(g.size(), nodes.size());

  std::map<int, int> net_index_of_position;
  for (const auto& rn : nodes) {
    const int id = rn["net_index"].get<int>();
    net_index_of_position[rn["index"].get<int>()] = id;
    ASSERT_LT(id, static_cast<int>(g.size()));
    const Node& n = g.node(id);
    const NodeCost& c = costs.nodes[static_cast<std::size_t>(id)];
    const std::string where = "node " + std::to_string(id) + " '" + n.name + "'";
    EXPECT_EQ(reference_class_name(n.op), rn["layer_class"].get<std::string>()) << where;
    EXPECT_EQ(n.role == Role::Backward, rn["is_backward"].get<bool>()) << where;
    EXPECT_EQ(n.shape, rn["out_shape"].get<Shape>()) << where;
    EXPECT_TRUE(close(n.flops, rn["flop"].get<double>(), where + " flop"));
    EXPECT_TRUE(close(static_cast<double>(n.param_count), rn["param_count"].get<double>(), where + " params"));
    EXPECT_TRUE(close(c.compute_time_s, rn["cpu_cost"].get<double>(), where + " compute time"));
    EXPECT_TRUE(close(static_cast<double>(c.bytes), rn["ram_cost"].get<double>(), where + " bytes"));
    EXPECT_TRUE(close(c.compute_energy_j, rn["compute_cost_joules"].get<double>(), where + " compute energy"));
    EXPECT_TRUE(close(c.pagein_energy_j, rn["pagein_cost_joules"].get<double>(), where + " page-in energy"));
    EXPECT_TRUE(close(c.pageout_energy_j, rn["pageout_cost_joules"].get<double>(), where + " page-out energy"));
  }

  // The same edges, as a multiset (the reference repeats one edge; so does chain mode).
  std::multiset<std::pair<int, int>> theirs, ours;
  for (const auto& e : ref["edges"])
    theirs.insert({net_index_of_position.at(e[0].get<int>()), net_index_of_position.at(e[1].get<int>())});
  for (NodeId v = 0; v < static_cast<NodeId>(g.size()); ++v)
    for (NodeId u : g.node(v).inputs) ours.insert({u, v});
  EXPECT_EQ(ours, theirs);

  EXPECT_TRUE(close(static_cast<double>(g.fixed_memory().parameter_bytes), ref["parameter_cost"].get<double>(),
                    "parameter bytes"));
  EXPECT_TRUE(close(costs.total_compute_time_s, ref["total_runtime"].get<double>(), "total runtime"));
  EXPECT_TRUE(close(static_cast<double>(g.forward_activation_bytes()), ref["total_forward_ram"].get<double>(),
                    "forward activation bytes"));
}

INSTANTIATE_TEST_SUITE_P(Reference, Parity, ::testing::ValuesIn(reference_files()), [](const auto& info) {
  std::string name = info.param.substr(0, info.param.size() - 5);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
});

TEST(ParityFiles, AllThirtyTwoArePresent) { EXPECT_EQ(reference_files().size(), 32u); }

}  // namespace
}  // namespace poet
