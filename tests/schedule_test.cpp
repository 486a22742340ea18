#include "poet/schedule/schedule.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hand_graph.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/util/error.h"

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

}  // namespace
}  // namespace poet
