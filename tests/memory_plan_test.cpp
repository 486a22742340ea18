#include "poet/plan/memory_plan.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <iostream>
#include <random>

#include "poet/backward/backward.h"
#include "poet/baselines/checkpoint_all.h"
#include "random_graphs.h"

namespace poet {
namespace {

BufferLife life(std::int64_t bytes, std::size_t from, std::size_t to) {
  return {.node = 0, .bytes = bytes, .alloc_rank = from, .release_rank = to, .created_by = 0, .released_by = 0};
}

TEST(MemoryPlan, BestFitReusesTheSmallestGapThatFits) {
  // A (64 B) lives 0-10 at the bottom; B (32 B) 0-4 and C (32 B) 0-4 above it; D (32 B)
  // 5-10 fits into the gap B and C leave. E (16 B) 5-10 too.
  const std::vector<BufferLife> b{life(64, 0, 10), life(32, 1, 4), life(32, 2, 4), life(32, 5, 10), life(16, 6, 10)};
  const MemoryPlan p = plan_memory_greedy(b, 16);
  EXPECT_EQ(p.offsets, (std::vector<std::int64_t>{0, 64, 96, 64, 96}));
  EXPECT_EQ(p.arena_bytes, 128);
  EXPECT_EQ(p.peak_live_bytes, 128);
  EXPECT_FALSE(find_overlap(b, p, 16));
  EXPECT_EQ(plan_memory_linear(b, 16).arena_bytes, 64 + 32 + 32 + 32 + 16);
}

TEST(MemoryPlan, AlignsAndIgnoresEmptyBuffers) {
  const std::vector<BufferLife> b{life(10, 0, 3), life(0, 1, 2), life(10, 1, 3)};
  const MemoryPlan p = plan_memory_greedy(b, 16);
  EXPECT_EQ(p.arena_bytes, 32);
  for (auto o : p.offsets) EXPECT_EQ(o % 16, 0);
  EXPECT_FALSE(find_overlap(b, p, 16));
}

TEST(MemoryPlan, OverlapCheckCatchesACollision) {
  const std::vector<BufferLife> b{life(32, 0, 5), life(32, 2, 6)};
  MemoryPlan bad{.offsets = {0, 16}, .arena_bytes = 48, .peak_live_bytes = 64};
  const auto message = find_overlap(b, bad, 16);
  ASSERT_TRUE(message);
  EXPECT_NE(message->find("overlaps"), std::string::npos) << *message;
}

TEST(MemoryPlan, RandomLifetimesNeverOverlap) {
  std::mt19937 rng(99);
  for (int c = 0; c < 300; ++c) {
    std::vector<BufferLife> b;
    const int n = std::uniform_int_distribution<int>(1, 200)(rng);
    for (int i = 0; i < n; ++i) {
      const std::size_t from = std::uniform_int_distribution<std::size_t>(0, 400)(rng);
      const std::size_t len = std::uniform_int_distribution<std::size_t>(1, 60)(rng);
      b.push_back(life(std::uniform_int_distribution<std::int64_t>(0, 5000)(rng), from, from + len));
    }
    const MemoryPlan p = plan_memory_greedy(b);
    ASSERT_FALSE(find_overlap(b, p)) << *find_overlap(b, p);
    ASSERT_GE(p.arena_bytes, p.peak_live_bytes);
    ASSERT_LE(p.arena_bytes, plan_memory_linear(b).arena_bytes);
  }
}

// The goal: on every zoo model's plans the arena is within 5% of the live peak.
// Checkpoint-all plans of both backward modes, and plans that page tensors out and in.
TEST(MemoryPlan, ArenaWithinFivePercentOfThePeakOnEveryZooModel) {
  std::mt19937 rng(5);
  for (const auto& m : model_catalog()) {
    for (const auto mode : {BackwardMode::Autodiff, BackwardMode::Chain}) {
      const Graph g = build_model_training_graph(m.name, {.batch_size = 1}, mode);
      const GraphCosts costs = estimate_costs(g, builtin_platform("a72"));
      for (const bool paging : {false, true}) {
        const Schedule s =
            paging ? testing::random_paging_schedule(rng, g, 0.5) : checkpoint_all_schedule(g);
        const SimulationResult r = simulate(g, costs, plan_from_schedule(s, g));
        const MemoryPlan p = plan_memory_greedy(r.buffers);
        ASSERT_FALSE(find_overlap(r.buffers, p)) << m.name;
        EXPECT_LE(p.fragmentation(), 0.05) << m.name << " " << backward_mode_name(mode) << (paging ? " paging" : "")
                                           << ": arena " << p.arena_bytes << " B, peak " << p.peak_live_bytes << " B";
        std::cout << m.name << " " << backward_mode_name(mode) << (paging ? " paging" : "") << ": arena "
                  << p.arena_bytes << " B, peak " << p.peak_live_bytes << " B, +"
                  << fmt::format("{:.2f}%", 100 * p.fragmentation()) << "\n";
        RecordProperty(m.name + "_" + std::string(backward_mode_name(mode)) + (paging ? "_paging" : ""),
                       fmt::format("{:.2f}%", 100 * p.fragmentation()));
      }
    }
  }
}

}  // namespace
}  // namespace poet
