#include "poet/plan/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>

namespace poet {
namespace {

std::int64_t aligned(std::int64_t bytes, std::int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

bool live_together(const BufferLife& a, const BufferLife& b) {
  return a.alloc_rank < b.release_rank && b.alloc_rank < a.release_rank;
}

// The most aligned bytes live at once: a sweep over allocation and release ranks.
std::int64_t peak_live(const std::vector<BufferLife>& buffers, std::int64_t alignment) {
  std::vector<std::pair<std::size_t, std::int64_t>> events;  // (rank, +/- bytes)
  for (const auto& b : buffers) {
    if (b.bytes == 0) continue;
    events.emplace_back(b.alloc_rank, aligned(b.bytes, alignment));
    events.emplace_back(b.release_rank, -aligned(b.bytes, alignment));
  }
  // At one rank, releases first: a buffer released at rank r is not live at r.
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;
  });
  std::int64_t live = 0, peak = 0;
  for (const auto& [rank, delta] : events) peak = std::max(peak, live += delta);
  return peak;
}

// Places buffers in the given order, each into the smallest gap that fits (best fit) or
// the lowest one (first fit).
MemoryPlan place(const std::vector<BufferLife>& buffers, const std::vector<std::size_t>& order,
                 std::int64_t alignment, bool best_fit) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<std::size_t> placed;
  std::vector<std::pair<std::int64_t, std::int64_t>> busy;  // [offset, end) of live neighbours
  for (const std::size_t i : order) {
    const std::int64_t size = aligned(buffers[i].bytes, alignment);
    if (size == 0) continue;
    busy.clear();
    for (const std::size_t j : placed)
      if (live_together(buffers[i], buffers[j]))
        busy.emplace_back(plan.offsets[j], plan.offsets[j] + aligned(buffers[j].bytes, alignment));
    std::sort(busy.begin(), busy.end());
    std::int64_t best = -1, best_gap = 0, cursor = 0;
    for (const auto& [start, end] : busy) {
      const std::int64_t gap = start - cursor;
      if (gap >= size && (best < 0 || (best_fit && gap < best_gap))) {
        best = cursor;
        best_gap = gap;
      }
      cursor = std::max(cursor, end);
    }
    plan.offsets[i] = best >= 0 ? best : cursor;
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[i] + size);
    placed.push_back(i);
  }
  plan.peak_live_bytes = peak_live(buffers, alignment);
  return plan;
}

}  // namespace

MemoryPlan plan_memory_greedy(const std::vector<BufferLife>& buffers, std::int64_t alignment) {
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  const auto lifetime = [&](std::size_t i) { return buffers[i].release_rank - buffers[i].alloc_rank; };
  const std::vector<std::function<bool(std::size_t, std::size_t)>> orders{
      [&](std::size_t a, std::size_t b) { return buffers[a].bytes > buffers[b].bytes; },
      [&](std::size_t a, std::size_t b) { return lifetime(a) > lifetime(b); },
      [&](std::size_t a, std::size_t b) {
        return buffers[a].bytes * static_cast<std::int64_t>(lifetime(a)) >
               buffers[b].bytes * static_cast<std::int64_t>(lifetime(b));
      },
      [&](std::size_t a, std::size_t b) { return buffers[a].alloc_rank < buffers[b].alloc_rank; },
      [&](std::size_t a, std::size_t b) { return buffers[a].release_rank > buffers[b].release_rank; },
  };
  std::optional<MemoryPlan> best;
  for (const auto& before : orders) {
    std::stable_sort(order.begin(), order.end(), before);
    for (const bool best_fit : {true, false}) {
      MemoryPlan plan = place(buffers, order, alignment, best_fit);
      if (!best || plan.arena_bytes < best->arena_bytes) best = std::move(plan);
      if (best->arena_bytes == best->peak_live_bytes) return *best;  // cannot do better
    }
  }
  return best ? *best : MemoryPlan{};
}

MemoryPlan plan_memory_linear(const std::vector<BufferLife>& buffers, std::int64_t alignment) {
  MemoryPlan plan;
  for (const auto& b : buffers) {
    plan.offsets.push_back(plan.arena_bytes);
    plan.arena_bytes += aligned(b.bytes, alignment);
  }
  plan.peak_live_bytes = peak_live(buffers, alignment);
  return plan;
}

std::optional<std::string> find_overlap(const std::vector<BufferLife>& buffers, const MemoryPlan& plan,
                                        std::int64_t alignment) {
  if (plan.offsets.size() != buffers.size())
    return fmt::format("the plan has {} offsets for {} buffers", plan.offsets.size(), buffers.size());
  const auto describe = [&](std::size_t i) {
    return fmt::format("buffer {} (node {}, bytes [{}, {}), live ranks [{}, {}))", i, buffers[i].node, plan.offsets[i],
                       plan.offsets[i] + buffers[i].bytes, buffers[i].alloc_rank, buffers[i].release_rank);
  };
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].bytes == 0) continue;
    if (plan.offsets[i] < 0 || plan.offsets[i] % alignment != 0 || plan.offsets[i] + buffers[i].bytes > plan.arena_bytes)
      return fmt::format("{} is misaligned or outside the {}-byte arena", describe(i), plan.arena_bytes);
    for (std::size_t j = i + 1; j < buffers.size(); ++j) {
      if (buffers[j].bytes == 0 || !live_together(buffers[i], buffers[j])) continue;
      if (plan.offsets[i] < plan.offsets[j] + buffers[j].bytes && plan.offsets[j] < plan.offsets[i] + buffers[i].bytes)
        return fmt::format("{} overlaps {}", describe(i), describe(j));
    }
  }
  return std::nullopt;
}

std::string memory_plan_ascii(const std::vector<BufferLife>& buffers, const MemoryPlan& plan, int width,
                              int height) {
  std::size_t last_rank = 1;
  for (const auto& b : buffers) last_rank = std::max(last_rank, b.release_rank);
  const double bytes_per_column = std::max(1.0, static_cast<double>(plan.arena_bytes) / width);
  const double ranks_per_row = std::max(1.0, static_cast<double>(last_rank) / height);
  static constexpr char kGlyphs[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string out = fmt::format("arena {} B, peak live {} B; one column = {:.0f} B, one row = {:.0f} events\n",
                                plan.arena_bytes, plan.peak_live_bytes, bytes_per_column, ranks_per_row);
  for (int row = 0; row * ranks_per_row < static_cast<double>(last_rank); ++row) {
    const auto rank = static_cast<std::size_t>(row * ranks_per_row);
    std::string line(static_cast<std::size_t>(width), '.');
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      const auto& b = buffers[i];
      if (b.bytes == 0 || rank < b.alloc_rank || rank >= b.release_rank) continue;
      const auto from = static_cast<int>(static_cast<double>(plan.offsets[i]) / bytes_per_column);
      const auto to = static_cast<int>(static_cast<double>(plan.offsets[i] + b.bytes - 1) / bytes_per_column);
      for (int c = from; c <= to && c < width; ++c) line[static_cast<std::size_t>(c)] = kGlyphs[b.node % 62];
    }
    out += fmt::format("{:>6} |{}|\n", rank, line);
  }
  return out;
}

}  // namespace poet
