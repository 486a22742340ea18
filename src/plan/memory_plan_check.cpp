// What every arena planner is judged by: the peak of live bytes (the lower bound), the
// overlap check, and the ASCII dump for debugging a placement by eye.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "poet/plan/memory_plan.h"
#include "poet/util/units.h"

namespace poet {
namespace {

std::string describe_buffer(const std::vector<BufferLife>& buffers, const MemoryPlan& plan, std::size_t i) {
  const BufferLife& b = buffers[i];
  return fmt::format("buffer {} (node {}, {} B at [{}, {}), live ranks [{}, {}))", i, b.node, b.bytes,
                     plan.offsets[i], plan.offsets[i] + b.bytes, b.alloc_rank, b.release_rank);
}

// Live aligned bytes after applying every event of each rank in 0..last (releases of a
// rank before its allocations). live[r] = bytes live during rank r.
std::vector<std::int64_t> live_by_rank(const std::vector<BufferLife>& buffers, std::int64_t alignment,
                                       std::size_t ranks) {
  std::vector<std::int64_t> delta(ranks + 1, 0);
  for (const BufferLife& b : buffers) {
    if (b.bytes == 0 || b.alloc_rank >= b.release_rank) continue;
    delta[std::min(b.alloc_rank, ranks)] += align_up(b.bytes, alignment);
    delta[std::min(b.release_rank, ranks)] -= align_up(b.bytes, alignment);
  }
  std::vector<std::int64_t> live(ranks, 0);
  std::int64_t running = 0;
  for (std::size_t r = 0; r < ranks; ++r) live[r] = running += delta[r];
  return live;
}

std::size_t rank_count(const std::vector<BufferLife>& buffers) {
  std::size_t last = 0;
  for (const BufferLife& b : buffers) last = std::max(last, b.release_rank);
  return last;
}

}  // namespace

std::int64_t peak_live_bytes(const std::vector<BufferLife>& buffers, std::int64_t alignment) {
  const std::vector<std::int64_t> live = live_by_rank(buffers, alignment, rank_count(buffers));
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

std::optional<std::string> find_overlap(const std::vector<BufferLife>& buffers, const MemoryPlan& plan,
                                        std::int64_t alignment) {
  if (auto fault = find_arena_fault(buffers, plan, alignment)) return std::move(fault->message);
  return std::nullopt;
}

std::optional<ArenaFault> find_arena_fault(const std::vector<BufferLife>& buffers, const MemoryPlan& plan,
                                           std::int64_t alignment) {
  if (plan.offsets.size() != buffers.size())
    return ArenaFault{std::min(plan.offsets.size(), buffers.size()),
                      fmt::format("the memory plan has {} offsets for {} buffers", plan.offsets.size(), buffers.size())};
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].bytes == 0) continue;
    if (plan.offsets[i] < 0 || (alignment > 0 && plan.offsets[i] % alignment != 0))
      return ArenaFault{i, fmt::format("{} is not at a non-negative multiple of the {}-byte alignment",
                                       describe_buffer(buffers, plan, i), alignment)};
    if (const auto taken = buffers[i].in_place_of;
        taken && (*taken >= buffers.size() || !in_place_placement_ok(plan.offsets[i], buffers[i].bytes,
                                                                      plan.offsets[*taken], buffers[*taken].bytes)))
      return ArenaFault{i, fmt::format("{} is computed in place over buffer {}, so it must be on exactly its bytes or "
                                       "apart from them",
                                       describe_buffer(buffers, plan, i), *taken)};
    if (plan.offsets[i] + buffers[i].bytes > plan.arena_bytes)
      return ArenaFault{i, fmt::format("{} ends {} past the end of the arena of {}", describe_buffer(buffers, plan, i),
                                       format_bytes_exact(plan.offsets[i] + buffers[i].bytes - plan.arena_bytes),
                                       format_bytes_exact(plan.arena_bytes))};
  }
  // Sweep in allocation order: only buffers allocated before i's release can meet it.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].bytes > 0) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::pair(buffers[a].alloc_rank, a) < std::pair(buffers[b].alloc_rank, b);
  });
  for (std::size_t x = 0; x < order.size(); ++x) {
    const std::size_t i = order[x];
    for (std::size_t y = x + 1; y < order.size() && buffers[order[y]].alloc_rank < buffers[i].release_rank; ++y) {
      const std::size_t j = order[y];
      if (!live_together(buffers[i], buffers[j])) continue;
      const bool apart = plan.offsets[i] >= plan.offsets[j] + buffers[j].bytes ||
                         plan.offsets[j] >= plan.offsets[i] + buffers[i].bytes;
      if (!apart)
        return ArenaFault{j, fmt::format("{} overlaps {} in the arena while both are live",
                                         describe_buffer(buffers, plan, std::min(i, j)),
                                         describe_buffer(buffers, plan, std::max(i, j)))};
    }
  }
  return std::nullopt;
}

std::string memory_plan_ascii(const std::vector<BufferLife>& buffers, const MemoryPlan& plan, int width,
                              int height) {
  static constexpr char kGlyphs[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  static constexpr std::size_t kGlyphCount = sizeof(kGlyphs) - 1;
  width = std::max(width, 1);
  height = std::max(height, 1);
  const std::size_t ranks = rank_count(buffers);
  const std::int64_t columns_span = std::max<std::int64_t>(plan.arena_bytes, 1);
  const double bytes_per_column = std::max(1.0, static_cast<double>(columns_span) / width);
  const auto used_width = static_cast<int>(std::min<double>(width, std::ceil(columns_span / bytes_per_column)));
  const std::size_t ranks_per_row = std::max<std::size_t>(1, (ranks + static_cast<std::size_t>(height) - 1) /
                                                                 static_cast<std::size_t>(height));
  // Live bytes per rank, unaligned: what the device actually holds.
  const std::vector<std::int64_t> live = live_by_rank(buffers, 1, ranks);
  const std::size_t peak_rank =
      live.empty() ? 0 : static_cast<std::size_t>(std::max_element(live.begin(), live.end()) - live.begin());

  std::string out = fmt::format(
      "arena {} B, peak live {} B (+{:.1f}%), {} buffers, {} event ranks\n"
      "one column = {:.0f} B, one row = {} rank(s); glyph = buffer index mod {}, '.' = free; right: live bytes\n",
      plan.arena_bytes, plan.peak_live_bytes, 100 * plan.fragmentation(), buffers.size(), ranks, bytes_per_column,
      ranks_per_row, kGlyphCount);
  for (std::size_t rank = 0; rank < ranks; rank += ranks_per_row) {
    // A row shows its first rank, or the peak rank if the peak falls inside the row.
    const std::size_t shown = peak_rank >= rank && peak_rank < rank + ranks_per_row ? peak_rank : rank;
    std::string line(static_cast<std::size_t>(used_width), '.');
    for (std::size_t i = 0; i < buffers.size() && i < plan.offsets.size(); ++i) {
      const BufferLife& b = buffers[i];
      if (b.bytes == 0 || shown < b.alloc_rank || shown >= b.release_rank) continue;
      const auto from = static_cast<int>(static_cast<double>(plan.offsets[i]) / bytes_per_column);
      const auto to = static_cast<int>(static_cast<double>(plan.offsets[i] + b.bytes - 1) / bytes_per_column);
      for (int c = std::max(from, 0); c <= to && c < used_width; ++c)
        line[static_cast<std::size_t>(c)] = kGlyphs[i % kGlyphCount];
    }
    out += fmt::format("{:>6} |{}| {} B{}\n", shown, line, live[shown], shown == peak_rank ? "  <- peak" : "");
  }
  return out;
}

std::optional<std::string> arena_over_budget(std::int64_t arena_bytes, std::int64_t fixed_bytes,
                                             std::int64_t budget_bytes) {
  const std::int64_t over = arena_bytes + fixed_bytes - budget_bytes;
  if (over <= 0) return std::nullopt;
  // Two ways out, as the budget is the device's RAM or only a figure: a plan for a budget
  // lower still (which checkpoint_all, keeping every activation, cannot make), or more RAM.
  return fmt::format("the arena ({}) and the fixed memory ({}) take {} over the RAM budget of {}: alignment and "
                     "fragmentation of the static memory plan put the arena above the live peak the budget holds, so "
                     "a device with that RAM cannot run this plan; plan at a budget at least {} lower with a strategy "
                     "that recomputes or pages (the arena shrinks less than the budget), and check the plan with poet "
                     "check-plan at this budget, or plan for a device of at least {}",
                     format_bytes_exact(arena_bytes), format_bytes_exact(fixed_bytes), format_bytes_exact(over),
                     format_bytes_exact(budget_bytes), format_bytes_exact(over),
                     format_bytes_exact(budget_bytes + over));
}

}  // namespace poet
