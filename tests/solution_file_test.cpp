// --solution: another solver's answer to the model written with --write-model, read back,
// held to the model and judged by the simulator.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "poet/backward/backward.h"
#include "poet/solve/solve.h"
#include "poet/util/error.h"
#include "work_limit.h"

namespace poet {
namespace {

struct SolutionFileTest : ::testing::Test {
  Graph g = build_model_training_graph("linear", {}, BackwardMode::Autodiff);
  GraphCosts costs = estimate_costs(g, builtin_platform("m0"));
  SolveOptions o;
  // One file per test: ctest runs the tests of this fixture in parallel processes.
  std::string path = (std::filesystem::temp_directory_path() /
                      fmt::format("poet_test_solution_{}.sol",
                                  ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                         .string();

  void SetUp() override {
    o.ram_budget_bytes = g.fixed_memory().parameter_bytes + 3500;  // tight: recomputation or paging needed
    o.progress = false;
    testing::limit_by_work(o, 5000);
  }
  void TearDown() override { std::filesystem::remove(path); }

  // The schedule's decision variables in a solver's format: `line` makes one line of a
  // column's name and value.
  void write_solution(const Schedule& s, const std::string& header,
                      const std::function<std::string(const std::string&, int)>& line) {
    std::ofstream out(path);
    out << header;
    const auto put = [&](const char* matrix, const SparseMatrix& m) {
      for (std::size_t t = 0; t < s.stages; ++t)
        for (NodeId i : m.row(t)) out << line(fmt::format("{}_{}_{}", matrix, t, i), 1) << "\n";
    };
    put("R", s.R), put("Sram", s.S_ram), put("Saux", s.S_aux), put("Min", s.M_in), put("Mout", s.M_out);
  }
};

TEST_F(SolutionFileTest, GurobiAndScipFormatsGiveTheSameScheduleAsCbc) {
  const SolveResult cbc = solve(g, costs, o);
  ASSERT_TRUE(cbc.schedule) << cbc.message;
  const std::vector<std::pair<std::string, std::function<std::string(const std::string&, int)>>> formats = {
      {"# Solution for model poet\n# Objective value = 1\n",
       [](const std::string& name, int v) { return fmt::format("{} {}", name, v); }},
      {"solution status: optimal solution found\nobjective value: 1\n",
       [](const std::string& name, int v) { return fmt::format("{:<20} {} \t(obj:0.5)", name, v); }},
      {"Optimal - objective value 1\n",
       [](const std::string& name, int v) { return fmt::format("      7 {:<20} {} 0.25", name, v); }}};
  for (const auto& [header, line] : formats) {
    write_solution(*cbc.schedule, header, line);
    o.solution_path = path;
    const SolveResult read = solve(g, costs, o);
    ASSERT_TRUE(read.simulation) << header << read.message;
    EXPECT_NEAR(read.simulation->total_energy_j(), cbc.simulation->total_energy_j(), 1e-12) << header;
    EXPECT_EQ(read.schedule->R, cbc.schedule->R) << header;
  }
}

TEST_F(SolutionFileTest, TheWrittenStartReadsBackAsTheSameSchedule) {
  const std::string model = path + ".lp";
  o.write_model_path = model;
  o.write_start_path = path;
  const SolveResult written = solve(g, costs, o);
  ASSERT_TRUE(written.schedule) << written.message;
  std::filesystem::remove(model);
  ASSERT_GT(written.schedule->R.count() + written.schedule->M_in.count(), g.size()) << "the budget needs restorations";

  o.write_model_path.clear();
  o.write_start_path.clear();
  o.solution_path = path;
  const SolveResult read = solve(g, costs, o);
  ASSERT_TRUE(read.simulation) << read.message;
  EXPECT_NEAR(read.simulation->total_energy_j(), written.simulation->total_energy_j(), 1e-12);
  EXPECT_EQ(read.schedule->R, written.schedule->R);
  EXPECT_EQ(read.schedule->M_in, written.schedule->M_in);
}

TEST_F(SolutionFileTest, AStartForAMissingFolderIsRefusedBeforeSolving) {
  o.write_model_path = path + ".lp";
  o.write_start_path = "/nonexistent-folder/start.sol";
  try {
    solve(g, costs, o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--write-start: the folder '/nonexistent-folder' does not exist"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(o.write_model_path)) << "checked before the model was written";
}

TEST_F(SolutionFileTest, RejectsAFileOfAnotherModel) {
  std::ofstream(path) << "x1 1\nx2 0\n";
  o.solution_path = path;
  try {
    solve(g, costs, o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("names no column of this model"), std::string::npos) << e.what();
  }
}

TEST_F(SolutionFileTest, RejectsASolutionThatBreaksTheBudget) {
  // Checkpoint-all's R alone: nothing kept, so the inputs of each node are missing.
  std::ofstream out(path);
  for (std::size_t t = 0; t < g.size(); ++t) out << fmt::format("R_{}_{} 1\n", t, t);
  out.close();
  o.solution_path = path;
  EXPECT_THROW(solve(g, costs, o), InputError);
}

TEST_F(SolutionFileTest, RejectsAFolderAndAMissingFileByName) {
  const std::pair<std::string, std::string> cases[] = {{std::filesystem::temp_directory_path().string(), "folder"},
                                                       {path + ".missing", "no such file"}};
  for (const auto& [bad, why] : cases) {
    o.solution_path = bad;
    try {
      solve(g, costs, o);
      ADD_FAILURE() << bad << " was read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

TEST_F(SolutionFileTest, RejectsAValueThatIsNotANumber) {
  std::ofstream(path) << "R_0_0 yes\n";
  o.solution_path = path;
  EXPECT_THROW(solve(g, costs, o), InputError);
}

}  // namespace
}  // namespace poet
