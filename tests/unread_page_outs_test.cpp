#include <gtest/gtest.h>

#include "../src/solve/milp_model.h"
#include "../src/solve/unread_page_outs.h"
#include "hand_graph.h"
#include "poet/cost/cost_model.h"
#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/simulate/simulator.h"

namespace poet {
namespace {

// The hand graph's x (40 B) is read by relu in stage 1 and by d_x in stage 4.
struct HandCase {
  Graph g = testing::hand_graph();
  GraphCosts costs = estimate_costs(g, testing::hand_device());
  SolveOptions o;
  HandCase() { o.ram_budget_bytes = 1000; }
  double milp_energy(const Schedule& s) const {
    const solve_internal::MilpModel m(g, costs, o, o.ram_budget_bytes);
    const auto x = m.assignment(s);
    EXPECT_TRUE(m.satisfied_by(x));
    return m.objective_value(x) * m.objective_scale();
  }
  double simulated_energy(const Schedule& s) const {
    return simulate(g, costs, plan_from_schedule(s, g)).total_energy_j();
  }
};

TEST(UnreadPageOuts, APageOutNothingPagesInIsDroppedWithItsStorageCopy) {
  const HandCase c;
  Schedule s = checkpoint_all_schedule(c.g);  // x stays in RAM through stage 4
  s.M_out.set(1, 0);
  for (std::size_t t = 2; t < 5; ++t) s.S_aux.set(t, 0);
  const double before = c.simulated_energy(s), milp_before = c.milp_energy(s);

  Schedule cleaned = s;
  EXPECT_EQ(solve_internal::drop_unread_page_outs(cleaned), std::vector<NodeId>{0});
  EXPECT_EQ(cleaned.M_out.count(), 0u);
  EXPECT_EQ(cleaned.S_aux.count(), 0u);
  EXPECT_EQ(cleaned.R, s.R);
  EXPECT_EQ(cleaned.S_ram, s.S_ram);
  const double pageout = c.costs.nodes[0].pageout_energy_j;
  ASSERT_GT(pageout, 0);
  EXPECT_NEAR(c.simulated_energy(cleaned), before - pageout, 1e-9);
  EXPECT_NEAR(c.milp_energy(cleaned), milp_before - pageout, 1e-9);
}

TEST(UnreadPageOuts, APageOutAPageInReadsStays) {
  const HandCase c;
  Schedule s = checkpoint_all_schedule(c.g);
  // x paged out in stage 1, away from RAM in stages 2 and 3, paged in for d_x in stage 4.
  s.M_out.set(1, 0);
  for (std::size_t t = 2; t < 5; ++t) s.S_aux.set(t, 0);
  for (std::size_t t = 2; t < 5; ++t) s.S_ram.set(t, 0, false);
  s.M_in.set(4, 0);
  c.milp_energy(s);  // the MILP accepts it (strict accounting: d_x reads the page-in)
  Schedule cleaned = s;
  EXPECT_TRUE(solve_internal::drop_unread_page_outs(cleaned).empty());
  EXPECT_EQ(cleaned, s);
}

}  // namespace
}  // namespace poet
