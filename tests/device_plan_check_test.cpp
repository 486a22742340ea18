// The device plan validator: forged plans with a good CRC are rejected unless they are
// legal, by an independent replay; every strategy's plan on random graphs passes.
#include "poet/simulate/device_plan_check.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "hand_graph.h"
#include "poet/backward/backward.h"
#include "poet/cost/device.h"
#include "poet/graph/op_table.h"
#include "poet/lower/lower.h"
#include "poet/models/zoo.h"
#include "poet/lower/transfer_planner.h"
#include "poet/plan/memory_plan.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/solve/solve.h"
#include "poet/strategy/strategy.h"
#include "random_graphs.h"
#include "test_scale.h"

namespace poet {
namespace {

DeviceProfile slow_storage() {
  DeviceProfile d = testing::hand_device();
  d.flops_per_second = 1e6;
  d.flops_per_joule = 1e7;
  d.pagein_latency_s = 1e-3;
  d.pagein_bytes_per_s = 2e3;
  d.pageout_latency_s = 2e-3;
  d.pageout_bytes_per_s = 1e3;
  return d;
}

// Costs whose transfers take no time: the simulator's memory events then fall in plan
// order, which the independent replay below assumes (with real transfer times a buffer
// being paged out is held past its free, which only the simulator models).
GraphCosts instant_paging_costs(const Graph& g) {
  GraphCosts costs = estimate_costs(g, slow_storage());
  for (NodeCost& c : costs.nodes) c.pagein_time_s = c.pageout_time_s = 0;
  return costs;
}

// What poet writes for `plan` (src/cli/device_output.cpp): simulated, arena planned over
// plan order, encoded, and read back.
DevicePlan device_plan_of(const Graph& g, const GraphCosts& costs, const Plan& plan,
                          const SimulationOptions& options = {}) {
  const std::vector<BufferLife> buffers = in_plan_order(simulate(g, costs, plan, options).buffers);
  return decode_device_plan(encode_device_plan(plan, buffers, plan_memory_greedy(buffers), g.size()), "test");
}

// A forger's plan: encoded with a correct CRC, then read back as a device would. Nothing
// if the reader refuses it already (a body error such as an offset past the arena).
std::optional<DevicePlan> forged(const DevicePlan& d) {
  try {
    return decode_device_plan(encode_device_plan(d), "forgery");
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// An independent replay of a device's residency and arena, in plan order: no simulator.
// Empty if legal, else why not.
std::string replay(const Graph& g, const DevicePlan& d) {
  if (d.node_count != g.size()) return "node count";
  const std::size_t n = g.size();
  std::vector<bool> resident(n, false), stored(n, false), computed(n, false);
  std::vector<std::int64_t> at(n, 0);
  std::size_t next_offset = 0;
  const auto& plan = d.plan.instructions;
  // A compute may take the bytes of the input it may be computed over in place, exactly,
  // when that input's next instruction is its free, before the next compute.
  const auto freed_next = [&](std::size_t p, std::size_t u) {
    for (std::size_t q = p + 1; q < plan.size() && plan[q].kind != InstrKind::Compute; ++q)
      if (static_cast<std::size_t>(plan[q].node) == u) return plan[q].kind == InstrKind::Free;
    return false;
  };
  for (std::size_t p = 0; p < plan.size(); ++p) {
    const Instruction& ins = plan[p];
    const auto v = static_cast<std::size_t>(ins.node);
    const std::int64_t bytes = g.node(ins.node).bytes;
    const auto place = [&]() -> std::string {
      const std::int64_t offset = d.offsets[next_offset++];
      if (offset + bytes > d.arena_bytes) return "past the arena";
      const std::optional<NodeId> over = ins.kind == InstrKind::Compute ? in_place_input(g, ins.node) : std::nullopt;
      for (std::size_t u = 0; u < n; ++u)
        if (resident[u] && u != v && offset < at[u] + g.node(static_cast<NodeId>(u)).bytes && at[u] < offset + bytes &&
            !(over && static_cast<std::size_t>(*over) == u && offset == at[u] && freed_next(p, u)))
          return "overlaps a live buffer";
      at[v] = offset;
      resident[v] = true;
      return {};
    };
    switch (ins.kind) {
      case InstrKind::Compute: {
        for (const NodeId in : g.node(ins.node).inputs)
          if (!resident[static_cast<std::size_t>(in)]) return "input not resident";
        if (resident[v]) return "computed while resident";
        if (std::string why = place(); !why.empty()) return why;
        computed[v] = true;
        break;
      }
      case InstrKind::PageOut:
        if (!resident[v]) return "page-out of a tensor not resident";
        stored[v] = true;
        break;
      case InstrKind::PageIn: {
        if (!stored[v]) return "page-in of a tensor never paged out";
        if (resident[v]) return "page-in of a resident tensor";
        if (std::string why = place(); !why.empty()) return why;
        break;
      }
      case InstrKind::Free:
        if (!resident[v]) return "free of a tensor not resident";
        resident[v] = false;
        break;
    }
  }
  for (std::size_t v = 0; v < n; ++v)
    if (!computed[v]) return "a node never computed";
  return {};
}

// A plan with paging: checkpoint-all with some tensors paged out and back in.
struct PlanCase {
  Graph graph;
  GraphCosts costs;
  DevicePlan plan;
};

PlanCase paging_case(std::mt19937& rng, int nodes) {
  for (;;) {
    Graph g = testing::random_graph(rng, nodes);
    const GraphCosts costs = instant_paging_costs(g);
    const Plan plan = plan_from_schedule(testing::random_paging_schedule(rng, g, 0.5), g);
    if (!plan_pages(plan)) continue;
    DevicePlan d = device_plan_of(g, costs, plan);
    return {std::move(g), costs, std::move(d)};
  }
}

std::size_t index_of(const DevicePlan& d, InstrKind kind, NodeId node) {
  for (std::size_t p = 0; p < d.plan.instructions.size(); ++p)
    if (d.plan.instructions[p] == Instruction{kind, node}) return p;
  ADD_FAILURE() << "no " << instr_name(kind) << " " << node;
  return 0;
}

// The index among the offsets of the buffer instruction p creates.
std::size_t offset_index(const DevicePlan& d, std::size_t p) {
  std::size_t k = 0;
  for (std::size_t q = 0; q < p; ++q) k += creates_buffer(d.plan.instructions[q].kind) ? 1 : 0;
  return k;
}

void expect_rejected(const PlanCase& c, const DevicePlan& forgery, const std::string& reason_part) {
  const auto read = forged(forgery);
  ASSERT_TRUE(read.has_value()) << "the reader itself refused it; the forgery tests nothing";
  const DevicePlanVerdict v = check_device_plan(c.graph, c.costs, *read);
  EXPECT_FALSE(v.valid());
  EXPECT_NE(v.error.find(reason_part), std::string::npos) << v.error;
  EXPECT_FALSE(replay(c.graph, *read).empty()) << "the forgery is legal after all";
}

TEST(DevicePlanCheck, PoetsOwnPlanIsLegal) {
  std::mt19937 rng(12);
  const PlanCase c = paging_case(rng, 40);
  const DevicePlanVerdict v = check_device_plan(c.graph, c.costs, c.plan);
  EXPECT_TRUE(v.valid()) << v.error;
  EXPECT_EQ(replay(c.graph, c.plan), "");
}

// A device holds the whole arena and the fixed memory: a budget below the two is refused,
// though the simulator's peak of live bytes fits it.
TEST(DevicePlanCheck, TheArenaWithTheFixedMemoryMustFitTheBudget) {
  std::mt19937 rng(12);
  const PlanCase c = paging_case(rng, 40);
  const std::int64_t fixed = simulate(c.graph, c.costs, c.plan.plan).fixed_bytes;
  SimulationOptions options;
  options.ram_budget_bytes = c.plan.arena_bytes + fixed;
  EXPECT_TRUE(check_device_plan(c.graph, c.costs, c.plan, options).valid());
  --*options.ram_budget_bytes;
  const DevicePlanVerdict v = check_device_plan(c.graph, c.costs, c.plan, options);
  ASSERT_FALSE(v.valid());
  EXPECT_NE(v.error.find("take 1 B over the RAM budget"), std::string::npos) << v.error;
}

// A plan of the model at a larger batch size has as many nodes, and every one of this
// graph's smaller tensors fits its buffer: only the arena, larger than its buffers reach,
// tells (`poet firmware -m mcu_cnn --plan` of a plan made with -b 8, -b forgotten).
TEST(DevicePlanCheck, APlanPlacedForLargerTensorsIsRefused) {
  const auto device_plan_at = [](int batch) {
    const Graph g = build_model_training_graph("mcu_cnn", {.batch_size = batch}, BackwardMode::Autodiff);
    const GraphCosts costs = costs_for(g, builtin_platform("m4"));
    const LoweredPlan l = lower(g, costs, checkpoint_all_schedule(g));
    return make_device_plan(l.plan, l.buffers, l.memory, g.size());
  };
  const Graph one = build_model_training_graph("mcu_cnn", {.batch_size = 1}, BackwardMode::Autodiff);
  const GraphCosts costs = costs_for(one, builtin_platform("m4"));
  EXPECT_TRUE(check_device_plan(one, costs, device_plan_at(1)).valid());
  const DevicePlanVerdict v = check_device_plan(one, costs, device_plan_at(8));
  ASSERT_FALSE(v.valid());
  EXPECT_NE(v.error.find("it was placed for larger tensors (made for another --batch-size?)"), std::string::npos)
      << v.error;
}

TEST(DevicePlanCheck, RejectsTheKnownIllegalForgeries) {
  std::mt19937 rng(7);
  const PlanCase c = paging_case(rng, 40);
  const auto& ins = c.plan.plan.instructions;
  // The first paged tensor: its page-out, page-in and the frees around them.
  std::size_t pageout = 0;
  while (ins[pageout].kind != InstrKind::PageOut) ++pageout;
  const NodeId paged = ins[pageout].node;
  const std::size_t pagein = index_of(c.plan, InstrKind::PageIn, paged);
  const std::size_t compute = index_of(c.plan, InstrKind::Compute, paged);
  const std::size_t free = index_of(c.plan, InstrKind::Free, paged);

  {  // free before compute
    DevicePlan d = c.plan;
    d.plan.instructions.erase(d.plan.instructions.begin() + static_cast<std::ptrdiff_t>(free));
    d.plan.instructions.insert(d.plan.instructions.begin() + static_cast<std::ptrdiff_t>(compute),
                               {InstrKind::Free, paged});
    SCOPED_TRACE("free before compute");
    expect_rejected(c, d, "is not in RAM: it has not been computed yet");
  }
  {  // page-in with no page-out
    DevicePlan d = c.plan;
    d.plan.instructions.erase(d.plan.instructions.begin() + static_cast<std::ptrdiff_t>(pageout));
    SCOPED_TRACE("page-in with no page-out");
    expect_rejected(c, d, "it was never paged out");
  }
  {  // use after free: the tensor's page-in dropped (its offset with it), so its user reads a freed tensor
    DevicePlan d = c.plan;
    d.offsets.erase(d.offsets.begin() + static_cast<std::ptrdiff_t>(offset_index(d, pagein)));
    d.plan.instructions.erase(d.plan.instructions.begin() + static_cast<std::ptrdiff_t>(pagein));
    SCOPED_TRACE("use after free");
    expect_rejected(c, d, "freed by instruction");
  }
  {  // an offset inside the arena whose buffer (the largest) runs past its end
    DevicePlan d = c.plan;
    std::size_t largest = 0;
    for (std::size_t p = 0; p < ins.size(); ++p)
      if (ins[p].kind == InstrKind::Compute && c.graph.node(ins[p].node).bytes > c.graph.node(ins[largest].node).bytes)
        largest = p;
    ASSERT_GT(c.graph.node(ins[largest].node).bytes, d.alignment);
    d.offsets[offset_index(d, largest)] = d.arena_bytes - d.alignment;
    SCOPED_TRACE("out of the arena");
    expect_rejected(c, d, "past the end of the");
  }
  {  // two live buffers on the same bytes: a compute's output placed on one of its inputs
    DevicePlan d = c.plan;
    std::size_t user = 0;
    while (ins[user].kind != InstrKind::Compute || c.graph.node(ins[user].node).inputs.empty()) ++user;
    const NodeId input = c.graph.node(ins[user].node).inputs.front();
    std::size_t holder = user;
    while (!(creates_buffer(ins[holder].kind) && ins[holder].node == input)) --holder;
    d.offsets[offset_index(d, user)] = d.offsets[offset_index(d, holder)];
    SCOPED_TRACE("overlapping live buffers");
    expect_rejected(c, d, "overlaps");
  }
  {  // a plan for another graph
    DevicePlan d = c.plan;
    d.node_count = c.graph.size() + 1;
    const DevicePlanVerdict v = check_device_plan(c.graph, c.costs, d);
    EXPECT_FALSE(v.valid());
    EXPECT_NE(v.error.find("a graph of 41 nodes"), std::string::npos) << v.error;
  }
}

TEST(DevicePlanCheck, EveryCrcValidForgeryItAcceptsIsLegalAndEveryLegalOneIsAccepted) {
  std::mt19937 rng(20261123);
  std::map<std::string, int> tally;
  int accepted = 0, rejected = 0, refused_by_reader = 0;
  for (int base = 0; base < 12; ++base) {
    const PlanCase c = paging_case(rng, std::uniform_int_distribution<int>(10, 40)(rng));
    const std::size_t n = c.plan.plan.instructions.size();
    for (int m = 0; m < 200; ++m) {
      // Mutate the instructions with their offsets (kept in step: one per buffer made).
      struct Item {
        Instruction ins;
        std::int64_t offset;
      };
      std::vector<Item> items;
      for (std::size_t p = 0, k = 0; p < n; ++p)
        items.push_back({c.plan.plan.instructions[p],
                         creates_buffer(c.plan.plan.instructions[p].kind) ? c.plan.offsets[k++] : 0});
      const auto pick = [&](std::size_t size) { return std::uniform_int_distribution<std::size_t>(0, size - 1)(rng); };
      const std::int64_t units = std::max<std::int64_t>(c.plan.arena_bytes / c.plan.alignment, 1);
      const int edits = std::uniform_int_distribution<int>(1, 2)(rng);
      for (int e = 0; e < edits; ++e) {
        const std::size_t p = pick(items.size());
        switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
          case 0: items[p].ins.kind = static_cast<InstrKind>(pick(4)); break;
          case 1: items[p].ins.node = static_cast<NodeId>(pick(c.graph.size())); break;
          case 2: if (p + 1 < items.size()) std::swap(items[p], items[p + 1]); break;
          case 3: if (items.size() > 1) items.erase(items.begin() + static_cast<std::ptrdiff_t>(p)); break;
          case 4: items.insert(items.begin() + static_cast<std::ptrdiff_t>(p), items[pick(items.size())]); break;
          case 5: items[p].offset = std::uniform_int_distribution<std::int64_t>(0, units - 1)(rng) * c.plan.alignment; break;
        }
      }
      DevicePlan d = c.plan;
      d.plan.instructions.clear();
      d.offsets.clear();
      for (const Item& item : items) {
        d.plan.instructions.push_back(item.ins);
        if (creates_buffer(item.ins.kind)) d.offsets.push_back(item.offset);
      }
      const auto read = forged(d);
      if (!read) {
        ++refused_by_reader;
        continue;
      }
      const DevicePlanVerdict v = check_device_plan(c.graph, c.costs, *read);
      const std::string why_illegal = replay(c.graph, *read);
      ASSERT_EQ(v.valid(), why_illegal.empty())
          << "base " << base << ", mutant " << m << ": validator: " << (v.valid() ? "legal" : v.error)
          << "; replay: " << (why_illegal.empty() ? "legal" : why_illegal);
      (v.valid() ? accepted : rejected)++;
      if (!v.valid()) ++tally[why_illegal];
    }
  }
  std::cout << "  forgeries: " << accepted << " legal and accepted, " << rejected << " illegal and rejected, "
            << refused_by_reader << " refused by the reader\n";
  for (const auto& [why, count] : tally) std::cout << "    " << count << " " << why << "\n";
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(accepted, 10) << "some mutations (a swap of independent instructions) stay legal";
}

// Every baseline and POET's heuristic on random graphs and budgets: each schedule's device
// plan (transfer-planned, arena-planned, encoded and read back) passes the validator.
TEST(DevicePlanCheck, EveryStrategysPlanOnRandomGraphsIsLegal) {
  std::mt19937 rng(20261124);
  std::map<std::string, int> checked_by_method;
  int checked = 0;
  const int graphs = testing::test_cases(120);
  for (int c = 0; c < graphs; ++c) {
    // Random DAGs, and every third case a chain (what revolve and POFO take).
    std::vector<std::int64_t> elems(std::uniform_int_distribution<std::size_t>(3, 30)(rng));
    for (auto& e : elems) e = std::uniform_int_distribution<std::int64_t>(1, 1024)(rng);
    const Graph g = c % 3 == 2 ? testing::chain_training_graph(elems)
                               : testing::random_graph(rng, std::uniform_int_distribution<int>(4, 60)(rng));
    const GraphCosts costs = estimate_costs(g, slow_storage());
    const auto peak = simulate(g, costs, plan_from_schedule(checkpoint_all_schedule(g), g));
    // A budget between the least any schedule needs and checkpoint-all's peak.
    const std::int64_t least = peak.fixed_bytes + g.largest_footprint().bytes;
    SimulationOptions options;
    options.ram_budget_bytes =
        least + static_cast<std::int64_t>(static_cast<double>(peak.peak_bytes - least) *
                                          std::uniform_real_distribution<double>(0.0, 1.0)(rng));
    std::vector<std::pair<std::string, Schedule>> schedules;
    for (const std::string& name : strategy_names(StrategyKind::Baseline))
      if (StrategyResult r = schedule_for_budget(name, g, costs, {.budget = options}); r.found())
        schedules.emplace_back(name, *r.schedule);
    SolveOptions so;
    so.ram_budget_bytes = *options.ram_budget_bytes;
    so.heuristic_only = true;
    so.progress = false;
    if (SolveResult r = solve(g, costs, so); r.schedule) schedules.emplace_back("poet --heuristic", *r.schedule);
    for (const auto& [name, schedule] : schedules) {
      const Plan plan = plan_from_schedule(schedule, g);
      SimulationOptions judged = options;
      // A baseline's schedule may not fit (it reports that); the device plan is judged as made.
      try {
        simulate(g, costs, plan, judged);
      } catch (const InvalidPlan&) {
        judged.ram_budget_bytes.reset();
      }
      const Plan moved = plan_transfers(g, costs, plan, judged).plan;
      const DevicePlan d = device_plan_of(g, costs, moved, judged);
      DevicePlanVerdict v = check_device_plan(g, costs, d, judged);
      // Fragmentation may put the arena over the budget the schedule fits: refused as such,
      // and legal otherwise.
      const std::int64_t fixed = v.simulation.value_or(peak).fixed_bytes;
      if (judged.ram_budget_bytes && d.arena_bytes + fixed > *judged.ram_budget_bytes) {
        ASSERT_NE(v.error.find("over the RAM budget"), std::string::npos) << "case " << c << ", " << name << ": "
                                                                          << v.error;
        judged.ram_budget_bytes.reset();
        v = check_device_plan(g, costs, d, judged);
      }
      ASSERT_TRUE(v.valid()) << "case " << c << ", " << name << ": " << v.error;
      // And by the independent replay in plan order, the order a device runs: an arena
      // planned over the simulator's time order failed it (a page-in that waits for the
      // bus got the bytes of a tensor a later instruction still reads).
      ASSERT_EQ(replay(g, d), "") << "case " << c << ", " << name;
      ++checked;
      ++checked_by_method[name];
    }
  }
  std::cout << "  " << checked << " device plans checked:";
  for (const auto& [name, count] : checked_by_method) std::cout << " " << name << " " << count;
  std::cout << "\n";
  EXPECT_EQ(checked_by_method.size(), strategy_names(StrategyKind::Baseline).size() + 1) << "every strategy found some schedule";
  EXPECT_GT(checked, 250 * graphs / 120);
}

}  // namespace
}  // namespace poet
