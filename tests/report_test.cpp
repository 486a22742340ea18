#include "poet/report/svg.h"

#include <gtest/gtest.h>

#include <random>

#include "hand_graph.h"
#include "poet/plan/plan.h"
#include "poet/report/chart.h"
#include "poet/schedule/checkpoint_all.h"
#include "random_graphs.h"

namespace poet {
namespace {

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// A tiny well-formedness check: starts with <svg, every element opened is closed in order,
// and no raw '<' or '&' hides in text (escaping works).
bool well_formed(const std::string& svg) {
  if (svg.rfind("<svg", 0) != 0) return false;
  std::vector<std::string> open;
  for (std::size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at + 1)) {
    const std::size_t end = svg.find('>', at);
    if (end == std::string::npos) return false;
    if (svg.find('<', at + 1) < end) return false;  // a '<' inside a tag: unescaped text
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
  for (std::size_t at = svg.find('&'); at != std::string::npos; at = svg.find('&', at + 1)) {
    const std::size_t semi = svg.find(';', at);
    if (semi == std::string::npos || semi - at > 6) return false;
  }
  return open.empty();
}

// The five-node hand graph's schedule, every matrix written out: x (0) is paged out as soon
// as it is computed and paged back in during stage 2 for d_x (4); relu (1) is dropped after
// the loss reads it and recomputed in stage 3 for d_relu.
Schedule hand_schedule() {
  Schedule s(5, "by hand");
  for (std::size_t t = 0; t < 5; ++t) s.R.set(t, static_cast<NodeId>(t));
  s.R.set(3, 1);
  s.M_out.set(0, 0);
  for (std::size_t t = 1; t < 5; ++t) s.S_aux.set(t, 0);
  s.M_in.set(2, 0);
  s.S_ram.set(3, 0);
  s.S_ram.set(4, 0);
  s.S_ram.set(1, 0);  // x stays in RAM until relu's compute in stage 1
  s.S_ram.set(2, 1);
  s.S_ram.set(3, 2);
  s.S_ram.set(4, 3);
  return s;
}

TEST(Report, ScheduleDrawsEveryEventOnce) {
  const Graph g = testing::hand_graph();
  const std::string svg = schedule_svg(g, hand_schedule());
  EXPECT_TRUE(well_formed(svg));
  EXPECT_EQ(count(svg, "class=\"compute\""), 5u);
  EXPECT_EQ(count(svg, "class=\"recompute\""), 1u);
  EXPECT_EQ(count(svg, "class=\"pageout\""), 1u);
  EXPECT_EQ(count(svg, "class=\"pagein\""), 1u);
  EXPECT_TRUE(contains(svg, "compute: 5"));
  EXPECT_TRUE(contains(svg, "recompute: 1"));
  EXPECT_TRUE(contains(svg, "page-out: 1"));
  EXPECT_TRUE(contains(svg, "page-in: 1"));
  EXPECT_TRUE(contains(svg, "<title>stage 3: recompute 'relu' (1)</title>"));
  EXPECT_TRUE(contains(svg, "<title>stage 0: page-out 'x' (0)</title>"));
  EXPECT_TRUE(contains(svg, "<title>stage 2: page-in 'x' (0)</title>"));
  EXPECT_TRUE(contains(svg, "'x' (0) on storage in stages 1-4"));
  EXPECT_TRUE(contains(svg, "hand: by hand schedule"));
  EXPECT_TRUE(contains(svg, "forward"));
  EXPECT_TRUE(contains(svg, "backward"));
}

TEST(Report, ScheduleSplitsACellWithTwoEvents) {
  // x is computed and paged out in stage 0: both show, side by side in one cell.
  const std::string svg = schedule_svg(testing::hand_graph(), hand_schedule());
  const auto x_of = [&](const std::string& title) {
    const std::size_t at = svg.rfind("<rect x=\"", svg.find(title));
    return std::stod(svg.substr(at + 9));
  };
  EXPECT_LT(x_of("stage 0: compute 'x'"), x_of("stage 0: page-out 'x'"));
}

TEST(Report, ScheduleEscapesNamesAndUsesTheTitleGiven) {
  Graph g = testing::hand_graph();
  Graph renamed("a<b>&c");
  for (Node n : g.nodes()) {
    if (n.name == "relu") n.name = "relu<&>";
    renamed.add(std::move(n));
  }
  ScheduleSvgOptions options;
  options.title = "Figure 2 \"again\" on dev-\xff.json";  // a --platform path may hold any bytes
  const std::string svg = schedule_svg(renamed, hand_schedule(), options);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_TRUE(contains(svg, "recompute 'relu&lt;&amp;&gt;' (1)"));
  EXPECT_TRUE(contains(svg, "Figure 2 &quot;again&quot; on dev-\xef\xbf\xbd.json")) << "U+FFFD: XML is UTF-8";
  EXPECT_FALSE(contains(svg, "\xff"));
}

TEST(Report, ScheduleRejectsAScheduleOfAnotherSize) {
  EXPECT_THROW(schedule_svg(testing::hand_graph(), Schedule(4, "short")), InputError);
}

TEST(Report, MemoryTimelineShowsBudgetAndPeak) {
  const Graph g = testing::hand_graph();
  const auto r = simulate(g, estimate_costs(g, testing::hand_device()),
                          plan_from_schedule(checkpoint_all_schedule(g), g));
  ASSERT_EQ(r.peak_bytes, 140);
  const std::string svg = memory_svg(g, r, 150);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_TRUE(contains(svg, "budget 150 B"));
  EXPECT_TRUE(contains(svg, "peak 140 B"));
  EXPECT_TRUE(contains(svg, "hand: memory over one training step"));
  EXPECT_TRUE(contains(svg, "stroke-dasharray"));  // the budget line
  EXPECT_FALSE(contains(svg, "over budget"));

  // Under a budget it exceeds: the excess is named and shaded.
  const std::string over = memory_svg(g, r, 100);
  EXPECT_TRUE(well_formed(over));
  EXPECT_TRUE(contains(over, "peak 140 B, over budget by 40 B"));
  EXPECT_TRUE(contains(over, "clip-path=\"url(#over-budget)\""));

  // No budget: no dashed line.
  EXPECT_FALSE(contains(memory_svg(g, r, std::nullopt), "stroke-dasharray"));
}

TEST(Report, MemoryTimelineByEventAndWithLargeFixedMemory) {
  const Graph g = testing::hand_graph();
  auto r = simulate(g, estimate_costs(g, testing::hand_device()), plan_from_schedule(checkpoint_all_schedule(g), g));
  MemorySvgOptions options;
  options.x_axis = MemoryAxis::Event;
  options.title = "by event";
  const std::string by_event = memory_svg(r, 150, options);
  EXPECT_TRUE(well_formed(by_event));
  EXPECT_TRUE(contains(by_event, "memory event"));
  EXPECT_TRUE(contains(by_event, ">by event</text>"));

  // Parameters dwarf the activations: the axis starts above zero and says so.
  r.fixed_bytes = 100 * 1024;
  r.peak_bytes = r.fixed_bytes + r.peak_activation_bytes;
  const std::string cut = memory_svg(r, std::nullopt);
  EXPECT_TRUE(well_formed(cut));
  EXPECT_TRUE(contains(cut, "axis starts at"));
  EXPECT_TRUE(contains(cut, "fixed 100 KiB"));
}

TEST(Report, MemoryAxisLabelsItsTicksInOneUnitFromWhereItStarts) {
  // resnet18_cifar's step on m4 at 50%: the ticks once read "614 KiB, 819 KiB, 1 MiB, 1.2 MiB",
  // under a note that the axis started at 600 KiB.
  SimulationResult r;
  r.fixed_bytes = 992'232;
  r.peak_activation_bytes = 666'240;
  r.peak_bytes = r.fixed_bytes + r.peak_activation_bytes;
  r.makespan_s = 50.8;
  r.timeline = {{0.0, 0}, {20.0, r.peak_activation_bytes}, {50.8, 0}};
  const std::string svg = memory_svg(r, 1'658'792);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_TRUE(contains(svg, "(axis starts at 0.6 MiB)"));
  for (const char* tick : {">0.6 MiB</text>", ">0.8 MiB</text>", ">1.0 MiB</text>", ">1.6 MiB</text>"})
    EXPECT_TRUE(contains(svg, tick)) << tick;
  EXPECT_FALSE(contains(svg, "KiB</text>"));
}

TEST(Report, ALineChartsLegendNamesTheSeriesThatCoversAnother) {
  LineChart chart;
  chart.title = "overheads";
  chart.series = {{"checkmate", {{40, 5.05}, {60, 0.23}}},
                  {"dtr", {{40, 12.8}, {60, 0.23}}},  // meets poet at one budget only
                  {"poet", {{40, 5.05}, {60, 0.23}, {80, 0.06}}}};
  const std::string svg = line_chart_svg(chart);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_TRUE(contains(svg, ">checkmate (= poet)</text>"));
  EXPECT_TRUE(contains(svg, ">dtr</text>"));
  EXPECT_TRUE(contains(svg, ">poet</text>"));
}

TEST(Report, LargeSchedulesStaySmall) {
  std::mt19937 rng(1);
  const Graph g = testing::random_graph(rng, 300);
  const Schedule s = testing::random_paging_schedule(rng, g, 0.3);
  const std::string svg = schedule_svg(g, s);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_LT(svg.size(), 1u << 20);
  EXPECT_EQ(count(svg, "class=\"pageout\""), s.M_out.count());
  EXPECT_EQ(count(svg, "class=\"pagein\""), s.M_in.count());
}

}  // namespace
}  // namespace poet
