#include "poet/schedule/schedule.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "hand_graph.h"
#include "poet/backward/backward.h"
#include "poet/models/zoo.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/util/error.h"
#include "scratch_folder.h"

namespace poet {
namespace {

TEST(Schedule, SparseMatrixKeepsRowsSortedAndUnique) {
  SparseMatrix m(4);
  m.set(3, 2);
  m.set(3, 0);
  m.set(3, 2);
  EXPECT_EQ(m.row(3), (SparseRow{0, 2}));
  EXPECT_TRUE(m.get(3, 0));
  EXPECT_FALSE(m.get(3, 1));
  m.set(3, 0, false);
  EXPECT_EQ(m.count(), 1u);
}

TEST(Schedule, CheckpointAllKeepsEachTensorUntilItsLastUse) {
  const Graph g = testing::hand_graph();
  const Schedule s = checkpoint_all_schedule(g);
  check_schedule_shape(s, g);
  EXPECT_EQ(s.R.count(), g.size());
  // x (0) is read by d_x at stage 4, so it is resident at the start of stages 1-4.
  for (std::size_t t = 1; t <= 4; ++t) EXPECT_TRUE(s.S_ram.get(t, 0)) << t;
  // relu (1) is last read at stage 3.
  EXPECT_TRUE(s.S_ram.get(3, 1));
  EXPECT_FALSE(s.S_ram.get(4, 1));
}

TEST(Schedule, JsonRoundTripIsExact) {
  const Graph g = testing::hand_graph();
  Schedule s = checkpoint_all_schedule(g);
  s.M_out.set(2, 0);
  s.M_in.set(3, 0);
  s.S_aux.set(3, 0);
  const auto j = schedule_to_json(s);
  EXPECT_EQ(schedule_from_json(nlohmann::json::parse(j.dump()), "test"), s);
}

// A mistyped field was dropped, and a "graph" of the wrong shape skipped the graph check.
TEST(Schedule, AnUnknownFieldOrAGraphOfAnotherShapeIsRefused) {
  const auto with = [](std::string_view extra) {
    return nlohmann::json::parse(
        fmt::format(R"({{"format":"poet-schedule","version":1,"stages":1,"R":[[0]],"S_ram":[[]],"S_aux":[[]],)"
                    R"("M_in":[[]],"M_out":[[]]{}}})",
                    extra));
  };
  const auto refusal = [&](std::string_view extra) {
    try {
      schedule_from_json(with(extra), "s.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal(R"(,"graph":{"name":"g","structure":"0badc0de"})"), "accepted");
  nlohmann::json next = with("");
  next["version"] = 2;
  try {
    schedule_from_json(next, "s.json");
    ADD_FAILURE() << "version 2 was read";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "schedule 's.json': unsupported version 2; this poet reads version 1");
  }
  EXPECT_EQ(refusal(R"(,"M_outt":[[]])"),
            "schedule 's.json': unknown field \"M_outt\" (did you mean \"M_out\"?); the fields are format, version, "
            "method, stages, graph, R, S_ram, S_aux, M_in, M_out");
  for (const char* graph : {R"(,"graph":"g")", R"(,"graph":{"structure":123})", R"(,"graph":{"name":"g"})"})
    EXPECT_NE(refusal(graph).find("it is {\"name\": ..., \"structure\": ...}, two strings"), std::string::npos)
        << graph;
}

TEST(Schedule, ShapeErrorsNameMatrixStageAndNode) {
  const Graph g = testing::hand_graph();
  Schedule s = checkpoint_all_schedule(g);
  s.R.set(2, 2, false);
  try {
    check_schedule_shape(s, g);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "schedule R[2][2] is 0: stage 2 must compute node 'loss'");
  }
  Schedule upper = checkpoint_all_schedule(g);
  upper.M_in.set(1, 3);
  EXPECT_THROW(check_schedule_shape(upper, g), InputError);
  EXPECT_THROW(check_schedule_shape(Schedule(3), g), InputError);
}

TEST(Schedule, RejectsMalformedJson) {
  EXPECT_THROW(schedule_from_json(nlohmann::json::parse(R"({"format":"poet-graph"})"), "x.json"), InputError);
  const auto bad_row = nlohmann::json::parse(
      R"({"format":"poet-schedule","version":1,"stages":2,"R":[[0],[0,7]],"S_ram":[[],[]],"S_aux":[[],[]],"M_in":[[],[]],"M_out":[[],[]]})");
  try {
    schedule_from_json(bad_row, "x.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "schedule 'x.json': R[1] holds 7, which is not a node id in [0, 1]; node i cannot be touched before "
                 "its own stage (matrices are lower-triangular)");
  }
}

TEST(Schedule, StructureChecksumIgnoresNamesAndBatchButNotEdges) {
  const auto lenet5 = [](int batch) { return build_autodiff_backward(build_forward_graph("lenet5", {.batch_size = batch})); };
  const Graph g = lenet5(1);
  EXPECT_EQ(g.structure_checksum(), lenet5(8).structure_checksum());  // other shapes
  Graph renamed("renamed");
  for (Node n : g.nodes()) {
    n.name += "_onnx";
    renamed.add(std::move(n));
  }
  EXPECT_EQ(g.structure_checksum(), renamed.structure_checksum());
  Graph rewired("rewired");
  for (Node n : g.nodes()) {
    if (n.op == OpKind::ReLU) n.op = OpKind::Sigmoid;
    rewired.add(std::move(n));
  }
  EXPECT_NE(g.structure_checksum(), rewired.structure_checksum());
}

class ScheduleFile : public ScratchFolderTest {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(ScheduleFile, NamesTheGraphItWasMadeForAndIsRefusedForAnother) {
  // Two graphs of five nodes: a schedule of one is no schedule of the other.
  const Graph hand = testing::hand_graph();
  const Graph chain = testing::chain_training_graph({10, 10, 10});
  ASSERT_EQ(hand.size(), chain.size());
  const std::string path = write("hand.json", schedule_file_text(checkpoint_all_schedule(hand), hand));
  EXPECT_EQ(load_schedule(path, hand), checkpoint_all_schedule(hand));
  EXPECT_EQ(error_of([&] { load_schedule(path, chain); }),
            "schedule '" + path + "' is for another graph than 'chain3' (it was made for 'hand'): they have as many "
            "nodes, but other operators or edges; make one for 'chain3' (poet solve or poet plan with "
            "--save-schedule), or give the graph the schedule was made for");
  // A file without "graph" (written before it was recorded) is held to the node count alone.
  const std::string old = write("old.json", schedule_to_json(checkpoint_all_schedule(hand)).dump());
  EXPECT_NO_THROW(load_schedule(old, hand));
  const Graph lenet5 = build_autodiff_backward(build_forward_graph("lenet5", {}));
  EXPECT_EQ(error_of([&] { load_schedule(path, lenet5); }),
            "schedule '" + path + "' has 5 stages but graph 'lenet5' has " + std::to_string(lenet5.size()) +
                " nodes (it was made for 'hand'): make one for 'lenet5' (poet solve or poet plan with "
                "--save-schedule), or give the graph the schedule was made for");
}

}  // namespace
}  // namespace poet
