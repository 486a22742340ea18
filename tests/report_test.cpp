#include "poet/report/svg.h"

#include <gtest/gtest.h>

#include <random>

#include "hand_graph.h"
#include "poet/baselines/checkpoint_all.h"
#include "poet/plan/plan.h"
#include "random_graphs.h"

namespace poet {
namespace {

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Every element opened is closed, in order: a tiny well-formedness check.
bool well_formed(const std::string& svg) {
  std::vector<std::string> open;
  for (std::size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at + 1)) {
    const std::size_t end = svg.find('>', at);
    if (end == std::string::npos) return false;
    const bool closing = svg[at + 1] == '/';
    const bool self_closing = svg[end - 1] == '/';
    const std::size_t name_start = at + (closing ? 2 : 1);
    const std::size_t name_end = svg.find_first_of(" />", name_start);
    const std::string name = svg.substr(name_start, name_end - name_start);
    if (closing) {
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
    } else if (!self_closing) {
      open.push_back(name);
    }
  }
  return open.empty() && svg.rfind("<svg", 0) == 0;
}

TEST(Report, ScheduleDrawsEveryEventOnce) {
  const Graph g = testing::hand_graph();
  // x is paged out in stage 2 and back in at stage 3; relu is recomputed in stage 4.
  Schedule s = checkpoint_all_schedule(g);
  s.method = "hand";
  s.M_out.set(2, 0);
  s.M_in.set(3, 0);
  s.R.set(4, 1);
  const std::string svg = schedule_svg(g, s);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_EQ(count(svg, "class=\"compute\""), 5u);
  EXPECT_EQ(count(svg, "class=\"recompute\""), 1u);
  EXPECT_EQ(count(svg, "class=\"pageout\""), 1u);
  EXPECT_EQ(count(svg, "class=\"pagein\""), 1u);
  EXPECT_NE(svg.find("recompute: 1"), std::string::npos);
  EXPECT_NE(svg.find("stage 4: recompute 'relu' (1)"), std::string::npos);
  EXPECT_NE(svg.find("hand: hand schedule, 5 nodes"), std::string::npos);
}

TEST(Report, MemoryTimelineShowsBudgetAndPeak) {
  const Graph g = testing::hand_graph();
  const auto r = simulate(g, estimate_costs(g, testing::hand_device()),
                          plan_from_schedule(checkpoint_all_schedule(g), g));
  const std::string svg = memory_svg(g, r, 150);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_NE(svg.find("budget 150 B"), std::string::npos);
  EXPECT_NE(svg.find("peak 140 B"), std::string::npos);
}

TEST(Report, LargeSchedulesStaySmall) {
  std::mt19937 rng(1);
  const Graph g = testing::random_graph(rng, 300);
  const std::string svg = schedule_svg(g, testing::random_paging_schedule(rng, g, 0.3));
  EXPECT_TRUE(well_formed(svg));
  EXPECT_LT(svg.size(), 1u << 20);
}

}  // namespace
}  // namespace poet
