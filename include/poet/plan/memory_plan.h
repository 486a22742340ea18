// Static memory plan: every buffer of a plan gets an offset in one arena, so that the plan
// runs with no allocator at run time (as TensorFlow Lite Micro's planners do). POET's model
// treats memory as fungible; a device's arena also pays for fragmentation, which this plan
// measures: arena_bytes against the peak of live bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "poet/simulate/simulator.h"

namespace poet {

struct MemoryPlan {
  std::vector<std::int64_t> offsets;  // one per buffer, in SimulationResult::buffers order
  std::int64_t arena_bytes = 0;
  std::int64_t peak_live_bytes = 0;   // the most bytes live at once (aligned sizes)
  double fragmentation() const {      // arena / peak - 1
    return peak_live_bytes == 0 ? 0.0 : static_cast<double>(arena_bytes) / static_cast<double>(peak_live_bytes) - 1;
  }
};

// Best fit by size, like TFLM's greedy planner: buffers in decreasing size (ties: earlier
// first); each goes into the smallest gap between the already-placed buffers that are live
// at the same time, or on top. It also tries other placement orders (by lifetime, by
// size x lifetime, by time of allocation) and first fit, and keeps the smallest arena. Not guaranteed optimal (the problem is
// NP-complete); costs O(N^2) per order for N buffers.
MemoryPlan plan_memory_greedy(const std::vector<BufferLife>& buffers, std::int64_t alignment = 16);

// Every buffer in its own region, one after another: the trivial plan, the test oracle and
// an upper bound.
MemoryPlan plan_memory_linear(const std::vector<BufferLife>& buffers, std::int64_t alignment = 16);

// A message naming the first two buffers that are live at the same time and overlap in
// the arena (or a buffer that runs past the arena's end); nothing if the plan is sound.
std::optional<std::string> find_overlap(const std::vector<BufferLife>& buffers, const MemoryPlan& plan,
                                        std::int64_t alignment = 16);

// The arena over time as ASCII art (rows: moments, columns: arena bytes), for debugging.
std::string memory_plan_ascii(const std::vector<BufferLife>& buffers, const MemoryPlan& plan, int width = 80,
                              int height = 40);

}  // namespace poet
