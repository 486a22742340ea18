// The greedy arena planner (see memory_plan.h): best fit in decreasing size, retried with
// a few other orders.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "poet/plan/memory_plan.h"
#include "poet/util/error.h"

namespace poet {
namespace {

enum class Fit { Best, First };

struct Interval {
  std::int64_t begin, end;  // [begin, end) bytes of the arena
  bool operator<(const Interval& o) const { return begin != o.begin ? begin < o.begin : end < o.end; }
};

// Places the buffers one by one in `order`. For each, collects the byte ranges of the
// placed buffers live at the same time, sorted by offset, and walks the gaps between them:
// best fit takes the smallest gap that holds the buffer, first fit the lowest; if none
// does, the buffer goes on top of them all. O(N^2 log N).
MemoryPlan place_in_order(const std::vector<BufferLife>& buffers, const std::vector<std::size_t>& order,
                          std::int64_t alignment, Fit fit) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<std::size_t> placed;
  placed.reserve(buffers.size());
  std::vector<Interval> taken;
  for (const std::size_t i : order) {
    const std::int64_t size = align_up(buffers[i].bytes, alignment);
    if (size == 0) continue;  // offset 0, conflicts with nothing
    taken.clear();
    for (const std::size_t j : placed)
      if (live_together(buffers[i], buffers[j]))
        taken.push_back({plan.offsets[j], plan.offsets[j] + align_up(buffers[j].bytes, alignment)});
    std::sort(taken.begin(), taken.end());
    std::int64_t chosen = -1, chosen_gap = 0;
    std::int64_t top = 0;  // the end of everything taken so far, walking upwards
    for (const Interval& t : taken) {
      const std::int64_t gap = t.begin - top;
      if (gap >= size && (chosen < 0 || (fit == Fit::Best && gap < chosen_gap))) {
        chosen = top;
        chosen_gap = gap;
        if (fit == Fit::First || gap == size) break;  // cannot fit tighter
      }
      top = std::max(top, t.end);
    }
    plan.offsets[i] = chosen >= 0 ? chosen : top;
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[i] + size);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace

MemoryPlan plan_memory_greedy(const std::vector<BufferLife>& all, std::int64_t alignment) {
  if (alignment <= 0)
    throw InputError(fmt::format("memory plan: alignment {} bytes; it must be at least 1", alignment));
  const InPlaceChains chains = in_place_chains(all);
  const std::vector<BufferLife>& buffers = chains.chains;
  const std::int64_t peak = peak_live_bytes(buffers, alignment);
  const auto size = [&](std::size_t i) { return align_up(buffers[i].bytes, alignment); };
  const auto length = [&](std::size_t i) {
    return static_cast<std::int64_t>(buffers[i].release_rank - buffers[i].alloc_rank);
  };
  // Every order breaks ties by allocation rank, then by index, so the result is
  // deterministic. The first is TFLM's.
  const auto by = [&](auto key) {
    return [&, key](std::size_t a, std::size_t b) {
      const auto ka = key(a), kb = key(b);
      if (ka != kb) return ka > kb;
      if (buffers[a].alloc_rank != buffers[b].alloc_rank) return buffers[a].alloc_rank < buffers[b].alloc_rank;
      return a < b;
    };
  };
  std::vector<std::vector<std::size_t>> orders;
  const auto add_order = [&](auto before) {
    std::vector<std::size_t> order(buffers.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), before);
    orders.push_back(std::move(order));
  };
  add_order(by(size));
  add_order(by(length));
  add_order(by([&](std::size_t i) { return size(i) * length(i); }));
  add_order(by([&](std::size_t i) { return -static_cast<std::int64_t>(buffers[i].alloc_rank); }));
  add_order(by([&](std::size_t i) { return static_cast<std::int64_t>(buffers[i].release_rank); }));

  MemoryPlan best;
  bool have_best = false;
  for (const auto& order : orders) {
    for (const Fit fit : {Fit::Best, Fit::First}) {
      MemoryPlan plan = place_in_order(buffers, order, alignment, fit);
      if (!have_best || plan.arena_bytes < best.arena_bytes) {
        best = std::move(plan);
        have_best = true;
      }
      if (best.arena_bytes == peak) break;  // no arena is smaller than the peak
    }
    if (best.arena_bytes == peak) break;
  }
  best.peak_live_bytes = peak;
  return chains.per_buffer(best);
}

}  // namespace poet
