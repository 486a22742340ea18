// The simulator on a hand-made graph whose figures are computed by hand below.
#include "poet/simulate/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "poet/plan/device_format.h"
#include "poet/plan/memory_plan.h"
#include "poet/plan/plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/util/error.h"
#include "hand_graph.h"

namespace poet {
namespace {

using testing::hand_device;
using testing::hand_graph;

Plan parse(const Graph& g, const char* text) { return plan_from_text(text, g, "test"); }

TEST(Simulator, CheckpointAllPlanIsAlgorithm2WithEarliestFrees) {
  const Graph g = hand_graph();
  const Plan plan = plan_from_schedule(checkpoint_all_schedule(g), g);
  EXPECT_EQ(plan, parse(g, "compute 0\ncompute 1\ncompute 2\ncompute 3\nfree 1\nfree 2\ncompute 4\n"
                           "free 0\nfree 3\nfree 4\n"));
}

// A hand-edited schedule's error names its entry, not an instruction of a plan never seen.
TEST(Simulator, EachInstructionIsTracedToItsScheduleEntry) {
  const Graph g = hand_graph();
  Schedule s = checkpoint_all_schedule(g);
  s.M_out.set(2, 1);
  s.M_in.set(3, 1);
  const Plan plan = plan_from_schedule(s, g);
  std::vector<std::string> entries;
  for (std::size_t i = 0; i < plan.instructions.size(); ++i) entries.push_back(schedule_entry_of(s, plan, i));
  const auto at = [&](InstrKind kind, NodeId node) {
    const auto it = std::ranges::find(plan.instructions, Instruction{kind, node});
    return entries[static_cast<std::size_t>(it - plan.instructions.begin())];
  };
  EXPECT_EQ(at(InstrKind::Compute, 0), "R[0] (stage 0 computes node 0)");
  EXPECT_EQ(at(InstrKind::PageOut, 1), "M_out[2] (stage 2 pages out node 1)");
  EXPECT_EQ(at(InstrKind::PageIn, 1), "M_in[3] (stage 3 pages in node 1)");
  EXPECT_EQ(at(InstrKind::Compute, 4), "R[4] (stage 4 computes node 4)");
  EXPECT_EQ(at(InstrKind::Free, 4), "a free after stage 4");
  EXPECT_EQ(schedule_entry_of(s, plan, plan.instructions.size()), "");
}

// A plan's text names each node in a comment, one line an instruction: a name with a
// newline (an ONNX node's may hold anything) must not start a line of its own (a graph
// keeps its names on one line).
TEST(Simulator, APlanWithANewlineInANodesNameReadsBack) {
  Graph g("hand");
  testing::add_hand_node(g, "x\ncompute 9", OpKind::Input, Role::Forward, 10, 0, {});
  testing::add_hand_node(g, "relu", OpKind::ReLU, Role::Forward, 10, 4, {0});
  testing::add_hand_node(g, "loss", OpKind::SoftmaxCrossEntropy, Role::Loss, 5, 2, {1});
  testing::add_hand_node(g, "d_relu", OpKind::ChainGradient, Role::Backward, 10, 8, {2, 1});
  testing::add_hand_node(g, "d_x", OpKind::ChainGradient, Role::Backward, 10, 8, {3, 0});
  const Plan plan = plan_from_schedule(checkpoint_all_schedule(g), g);
  const std::string text = plan_to_text(plan, g);
  EXPECT_NE(text.find("compute 0  # x\\ncompute 9\n"), std::string::npos) << text;
  EXPECT_EQ(plan_from_text(text, g, "written"), plan);
}

// A plan's first line names its graph's structure: a plan of another graph of as many
// nodes is refused for what it is, not at an instruction that happens to fail.
TEST(Simulator, APlanTextOfAnotherGraphIsRefused) {
  const Graph hand = hand_graph();
  const Graph chain = testing::chain_training_graph({10, 10, 10});
  ASSERT_EQ(hand.size(), chain.size());
  const std::string text = plan_to_text(plan_from_schedule(checkpoint_all_schedule(hand), hand), hand);
  EXPECT_EQ(text.rfind("# poet plan for graph 'hand', structure ", 0), 0u) << text;
  try {
    plan_from_text(text, chain, "p.txt");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "plan 'p.txt' is for another graph than 'chain3' (it was made for 'hand'): other operators "
                           "or edges; make one for 'chain3' (poet plan -o), or give the graph the plan was made for");
  }
  // Without the line (hand-written), the instructions alone are read.
  EXPECT_EQ(plan_from_text(text.substr(text.find('\n') + 1), hand, "p.txt"), plan_from_text(text, hand, "p.txt"));
}

TEST(Simulator, CheckpointAllFiguresByHand) {
  const Graph g = hand_graph();
  const auto costs = estimate_costs(g, hand_device());
  const auto r = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g));
  // Compute 0..4 s relu, 4..6 loss, 6..14 d_relu, 14..22 d_x. Peak at 6: x + relu + loss + d_relu.
  EXPECT_DOUBLE_EQ(r.makespan_s, 22);
  EXPECT_DOUBLE_EQ(r.compute_time_s, 22);
  EXPECT_DOUBLE_EQ(r.stall_s, 0);
  EXPECT_EQ(r.peak_activation_bytes, 140);
  EXPECT_DOUBLE_EQ(r.compute_energy_j, 11);
  EXPECT_DOUBLE_EQ(r.paging_energy_j(), 0);
  EXPECT_EQ(r.computes, 5u);
  EXPECT_EQ(r.recomputes, 0u);
}

TEST(Simulator, PagingOverlapsComputeAndReleasesRamWhenThePageOutEnds) {
  const Graph g = hand_graph();
  const auto costs = estimate_costs(g, hand_device());
  // Page x out after relu (4..7 s on the bus), page it back in before d_x (14..19 s).
  const Plan plan = parse(g, "compute 0\ncompute 1\npageout 0\nfree 0\ncompute 2\ncompute 3\nfree 1\nfree 2\n"
                             "pagein 0\ncompute 4\nfree 0\nfree 3\nfree 4\n");
  const auto r = simulate(g, costs, plan);
  EXPECT_DOUBLE_EQ(r.stall_s, 5);      // d_x waits 14 -> 19 for the page-in
  EXPECT_DOUBLE_EQ(r.makespan_s, 27);
  EXPECT_DOUBLE_EQ(r.compute_energy_j, 11);
  EXPECT_DOUBLE_EQ(r.pageout_energy_j, 1.5);  // (1 + 40/20) s x 0.5 W
  EXPECT_DOUBLE_EQ(r.pagein_energy_j, 2.5);   // (1 + 40/10) s x 0.5 W
  EXPECT_DOUBLE_EQ(r.total_energy_j(), 15);
  EXPECT_DOUBLE_EQ(r.transfer_time_s, 8);  // the bus busy 4..7 s and 14..19 s
  // x is freed at 4 s but its page-out ends at 7 s, after d_relu took 40 B at 6 s.
  EXPECT_EQ(r.peak_activation_bytes, 140);
  EXPECT_EQ(r.pageins, 1u);
  EXPECT_EQ(r.pageouts, 1u);
}

// What storage holds when each paged tensor has its copy there: x (40 B) once, though the
// plan pages it out twice, and relu; none for a plan that pages nothing.
TEST(Simulator, PagedTensorBytesCountEachPagedTensorOnce) {
  const Graph g = hand_graph();
  const Plan plan = parse(g, "compute 0\ncompute 1\npageout 0\npageout 1\nfree 0\nfree 1\ncompute 2\npagein 0\n"
                             "pageout 0\npagein 1\ncompute 3\nfree 1\nfree 2\ncompute 4\nfree 0\nfree 3\nfree 4\n");
  EXPECT_EQ(paged_tensor_bytes(plan, g),
            (std::vector<std::uint64_t>{static_cast<std::uint64_t>(g.node(0).bytes),
                                        static_cast<std::uint64_t>(g.node(1).bytes)}));
  EXPECT_TRUE(paged_tensor_bytes(plan_from_schedule(checkpoint_all_schedule(g), g), g).empty());
}

TEST(Simulator, ATransfersOwnCpuWorkDelaysTheComputeAfterIt) {
  const Graph g = hand_graph();
  DeviceProfile d = hand_device();
  d.paging_cpu_per_transfer_s = 0.5;
  d.paging_cpu_per_byte_s = 1.0 / 40;  // x's 40 B: 1.5 s of compute per transfer
  const auto costs = estimate_costs(g, d);
  EXPECT_DOUBLE_EQ(costs.nodes[0].paging_cpu_s, 1.5);
  const Plan plan = parse(g, "compute 0\ncompute 1\npageout 0\nfree 0\ncompute 2\ncompute 3\nfree 1\nfree 2\n"
                             "pagein 0\ncompute 4\nfree 0\nfree 3\nfree 4\n");
  const auto r = simulate(g, costs, plan);
  // The page-out runs 4..7 s on the bus and takes the CPU to 5.5 s: loss 5.5..7.5, d_relu
  // 7.5..15.5; the page-in runs 15.5..20.5 s and takes the CPU to 17 s; d_x waits to 20.5.
  EXPECT_DOUBLE_EQ(r.paging_cpu_s, 3);
  EXPECT_DOUBLE_EQ(r.stall_s, 3.5);
  EXPECT_DOUBLE_EQ(r.makespan_s, 28.5);
  EXPECT_DOUBLE_EQ(r.compute_time_s, 22);
  EXPECT_DOUBLE_EQ(r.total_energy_j(), 15);  // time on the CPU, not energy: the bus's figures hold it
}

// A charge calibrated above the storage phase's figures (DeviceProfile::paging_charge_scale)
// lengthens the step by the rest, but the kernels keep their time against the transfers: the
// same waits as at scale 1, and the makespan after them longer by the rest.
TEST(Simulator, ACalibratedChargeLengthensTheStepWithoutMovingTheKernelsAgainstTheTransfers) {
  const Graph g = hand_graph();
  DeviceProfile d = hand_device();
  d.paging_cpu_per_transfer_s = 0.5;
  d.paging_cpu_per_byte_s = 1.0 / 40;
  d.paging_charge_scale = 3;
  const auto costs = estimate_costs(g, d);
  EXPECT_DOUBLE_EQ(costs.nodes[0].paging_cpu_s, 1.5);
  EXPECT_DOUBLE_EQ(costs.nodes[0].paging_overhead_s, 3);
  const Plan plan = parse(g, "compute 0\ncompute 1\npageout 0\nfree 0\ncompute 2\ncompute 3\nfree 1\nfree 2\n"
                             "pagein 0\ncompute 4\nfree 0\nfree 3\nfree 4\n");
  const auto r = simulate(g, costs, plan);
  EXPECT_DOUBLE_EQ(r.stall_s, 3.5);                 // as at scale 1 (the test above)
  EXPECT_DOUBLE_EQ(r.paging_overhead_s, 6);         // 2 transfers x (3 - 1) x 1.5 s
  EXPECT_DOUBLE_EQ(r.paging_cpu_s, 9);              // 2 transfers x 3 x 1.5 s
  EXPECT_DOUBLE_EQ(r.makespan_s, 28.5 + 6);
  // Below 1 the smaller charge is all on the kernels' clock.
  d.paging_charge_scale = 0.5;
  const auto half = estimate_costs(g, d);
  EXPECT_DOUBLE_EQ(half.nodes[0].paging_cpu_s, 0.75);
  EXPECT_DOUBLE_EQ(half.nodes[0].paging_overhead_s, 0);
  EXPECT_DOUBLE_EQ(simulate(g, half, plan).paging_overhead_s, 0);
}

TEST(Simulator, UnderABudgetAComputeWaitsForThePageOutWhoseRamItNeeds) {
  const Graph g = hand_graph();
  const auto costs = estimate_costs(g, hand_device());
  const Plan plan = parse(g, "compute 0\ncompute 1\npageout 0\nfree 0\ncompute 2\ncompute 3\nfree 1\nfree 2\n"
                             "pagein 0\ncompute 4\nfree 0\nfree 3\nfree 4\n");
  // Without a budget d_relu takes its 40 B at 6 s, beside x's until its page-out ends at 7 s.
  EXPECT_EQ(simulate(g, costs, plan).peak_activation_bytes, 140);
  // With 120 B (what d_x needs with its inputs) d_relu waits for that end: it runs 7..15 s,
  // the page-in 15..20 s, d_x 20..28 s.
  const auto r = simulate(g, costs, plan, {.ram_budget_bytes = 120});
  EXPECT_EQ(r.peak_activation_bytes, 120);
  EXPECT_DOUBLE_EQ(r.stall_s, 6);  // 1 s for the page-out, 5 s for the page-in
  EXPECT_DOUBLE_EQ(r.makespan_s, 28);
  EXPECT_DOUBLE_EQ(r.total_energy_j(), 15);  // waiting changes time, never energy
  // Below what d_x needs, no wait helps: rejected as before, and simulate_for_budget says by
  // how much: by the least budget that fits (with the waits), not the peak without waits,
  // which asked for more (on a schedule of resnet18_cifar: 211,016 B over, where 11,464 B was
  // the truth).
  EXPECT_THROW(simulate(g, costs, plan, {.ram_budget_bytes = 119}), InvalidPlan);
  EXPECT_EQ(simulate_for_budget(g, costs, plan, {.ram_budget_bytes = 119}).peak_activation_bytes, 120);
  EXPECT_EQ(simulate_for_budget(g, costs, plan, {.ram_budget_bytes = 1}).peak_activation_bytes, 120);
  EXPECT_DOUBLE_EQ(simulate_for_budget(g, costs, plan, {.ram_budget_bytes = 120}).stall_s, 6);
}

TEST(Simulator, EarlierPageInHidesTheLatency) {
  const Graph g = hand_graph();
  const auto costs = estimate_costs(g, hand_device());
  // Issued before d_relu: the bus is busy until 7 s, the page-in runs 7..12 s, d_x starts at 14 s.
  const Plan plan = parse(g, "compute 0\ncompute 1\npageout 0\nfree 0\ncompute 2\npagein 0\ncompute 3\nfree 1\n"
                             "free 2\ncompute 4\nfree 0\nfree 3\nfree 4\n");
  const auto r = simulate(g, costs, plan);
  EXPECT_DOUBLE_EQ(r.stall_s, 0);
  EXPECT_DOUBLE_EQ(r.makespan_s, 22);
  EXPECT_EQ(r.peak_activation_bytes, 140);  // the page-in reuses x's buffer released at 7 s
}

TEST(Simulator, APageInFreedUnusedHoldsItsBufferUntilItEnds) {
  const Graph g = hand_graph();
  const auto costs = estimate_costs(g, hand_device());
  // The page-in waits for the page-out (bus busy 4..7 s), runs 7..12 s, and is freed at
  // once (the CPU is at 4 s): its buffer is taken at 7 s and released at 12 s, not at 4 s.
  const Plan plan = parse(g, "compute 0\ncompute 1\npageout 0\nfree 0\npagein 0\nfree 0\ncompute 2\ncompute 3\n"
                             "free 1\nfree 2\npagein 0\ncompute 4\nfree 0\nfree 3\nfree 4\n");
  const auto r = simulate(g, costs, plan);
  for (const auto& b : r.buffers) EXPECT_LT(b.alloc_rank, b.release_rank) << "buffer of node " << b.node;
  const auto held = std::find_if(r.buffers.begin(), r.buffers.end(),
                                 [](const auto& b) { return b.node == 0 && b.created_by == 4; });
  ASSERT_NE(held, r.buffers.end());
  EXPECT_EQ(held->released_by, 5u);
}

TEST(Simulator, BudgetCountsFixedMemoryAndNamesTheInstruction) {
  const Graph g = hand_graph();
  const auto costs = estimate_costs(g, hand_device());
  const Plan plan = plan_from_schedule(checkpoint_all_schedule(g), g);
  EXPECT_NO_THROW(simulate(g, costs, plan, {.ram_budget_bytes = 140}));
  try {
    simulate(g, costs, plan, {.ram_budget_bytes = 139});
    FAIL();
  } catch (const InvalidPlan& e) {
    EXPECT_STREQ(e.what(),
                 "instruction 3 (compute 'd_relu' (3)): RAM budget exceeded: 140 B needed (140 B activations + 0 B "
                 "fixed), budget 139 B, over by 1 B");
  }
}

// tests/data/bad_plans/*.plan: plans for the hand graph that must be rejected. Each file
// says what the rejection must say in a line "# expect: <text>", and may set a budget in
// bytes with "# budget: <bytes>".
TEST(Simulator, RejectsEveryPlanInTheBadPlansFolder) {
  const Graph g = hand_graph();
  const auto costs = estimate_costs(g, hand_device());
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(POET_TEST_DATA_DIR "/bad_plans")) {
    if (entry.path().extension() != ".plan") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto header = [&](const std::string& key) {
      const auto at = text.find("# " + key + ": ");
      if (at == std::string::npos) return std::string();
      const auto from = at + key.size() + 4;
      return text.substr(from, text.find('\n', from) - from);
    };
    const std::string expect = header("expect");
    ASSERT_FALSE(expect.empty()) << entry.path() << " has no '# expect:' line";
    SimulationOptions options;
    if (const auto budget = header("budget"); !budget.empty()) options.ram_budget_bytes = std::stoll(budget);
    try {
      simulate(g, costs, plan_from_text(text, g, entry.path().string()), options);
      ADD_FAILURE() << entry.path() << " was accepted";
    } catch (const InvalidPlan& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << entry.path() << ": " << e.what();
    }
    ++checked;
  }
  EXPECT_GE(checked, 7);
}

// The folder's binary member: a device plan cut short (7 bytes missing).
TEST(Simulator, TruncatedDevicePlanIsRejected) {
  try {
    load_device_plan(POET_TEST_DATA_DIR "/bad_plans/truncated.bin");
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("corrupted or truncated"), std::string::npos) << e.what();
  }
}

// x -> a (a convolution) -> r (a ReLU, computed over a in place) -> loss, 40 B each but
// the loss's 20, x kept to the end.
Graph in_place_chain() {
  using testing::add_hand_node;
  Graph g("in-place");
  add_hand_node(g, "x", OpKind::Input, Role::Forward, 10, 0, {});
  add_hand_node(g, "a", OpKind::Conv2d, Role::Forward, 10, 4, {0});
  add_hand_node(g, "r", OpKind::ReLU, Role::Forward, 10, 4, {1});
  add_hand_node(g, "loss", OpKind::SoftmaxCrossEntropy, Role::Loss, 5, 2, {2});
  return g;
}

TEST(Simulator, AComputeInPlaceTakesItsInputsBytesWhenThePlanFreesItNext) {
  const Graph g = in_place_chain();
  const GraphCosts costs = estimate_costs(g, testing::hand_device());
  // a is freed right after r: r takes its bytes, and x, a, r never take 120 B at once; the
  // most is x, r and the loss (100 B).
  const Plan plan = plan_from_text("compute 0\ncompute 1\ncompute 2\nfree 1\ncompute 3\nfree 2\nfree 0\nfree 3\n", g,
                                   "in place");
  const SimulationResult r = simulate(g, costs, plan, {.ram_budget_bytes = 100});
  EXPECT_EQ(r.peak_activation_bytes, 100);
  ASSERT_EQ(r.buffers.size(), 4u);
  EXPECT_EQ(r.buffers[2].in_place_of, std::optional<std::size_t>(1));
  EXPECT_EQ(r.buffers[1].released_by, 2u);  // handed over by r's compute, not by its free
  EXPECT_LT(r.buffers[1].release_rank, r.buffers[2].alloc_rank);
  const std::vector<BufferLife> ordered = in_plan_order(r.buffers);
  const MemoryPlan arena = plan_memory_greedy(ordered, 8);
  EXPECT_EQ(arena.offsets[2], arena.offsets[1]);
  EXPECT_EQ(arena.arena_bytes, arena.peak_live_bytes);
  EXPECT_EQ(find_overlap(ordered, arena, 8), std::nullopt);
  // Placed at a shift over a's bytes, r would read what it has overwritten.
  MemoryPlan shifted = arena;
  shifted.offsets[2] = arena.offsets[1] + 8;
  shifted.arena_bytes += 8;
  ASSERT_TRUE(find_overlap(ordered, shifted, 8));
  EXPECT_NE(find_overlap(ordered, shifted, 8)->find("computed in place over buffer 1"), std::string::npos);
}

TEST(Simulator, NoComputeInPlaceOverAnInputStillWanted) {
  const Graph g = in_place_chain();
  const GraphCosts costs = estimate_costs(g, testing::hand_device());
  for (const char* text : {
           // a is kept past the next compute (x, a, r and the loss: 140 B) ...
           "compute 0\ncompute 1\ncompute 2\ncompute 3\nfree 1\nfree 2\nfree 0\nfree 3\n",
           // ... or paged out after r, which needs its bytes as they were (x, a, r: 120 B).
           "compute 0\ncompute 1\ncompute 2\npageout 1\nfree 1\ncompute 3\nfree 2\nfree 0\nfree 3\n"}) {
    const SimulationResult r = simulate(g, costs, plan_from_text(text, g, "not in place"));
    EXPECT_GE(r.peak_activation_bytes, 120) << text;
    EXPECT_EQ(r.buffers[2].in_place_of, std::nullopt) << text;
    EXPECT_THROW(simulate(g, costs, plan_from_text(text, g, "not in place"), {.ram_budget_bytes = 100}), InvalidPlan)
        << text;
  }
}

}  // namespace
}  // namespace poet
