// The greedy arena planner (see memory_plan.h): best fit in decreasing size and a few other
// orders, each order then improved by a local search over the order.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <utility>

#include "poet/plan/memory_plan.h"
#include "poet/util/error.h"

namespace poet {
namespace {

enum class Fit { Best, First };

struct Interval {
  std::int64_t begin, end;  // [begin, end) bytes of the arena
  bool operator<(const Interval& o) const { return begin != o.begin ? begin < o.begin : end < o.end; }
};

// Places buffers in a given order, each into a gap between the already-placed buffers live
// at the same time (best fit: the smallest gap that holds it; first fit: the lowest), or on
// top of them all. Remembers the placement, so that a changed order is placed again only
// from its first changed position. O(N D log D) for N buffers that each meet D others.
class Placer {
 public:
  Placer(const std::vector<BufferLife>& buffers, std::int64_t alignment) {
    const std::size_t n = buffers.size();
    size_.resize(n);
    for (std::size_t i = 0; i < n; ++i) size_[i] = align_up(buffers[i].bytes, alignment);
    meets_.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j)
        if (live_together(buffers[i], buffers[j])) meets_[i].push_back(j), meets_[j].push_back(i);
    offset_.assign(n, kUnplaced);
  }

  const std::vector<std::size_t>& meets(std::size_t i) const { return meets_[i]; }
  std::int64_t size(std::size_t i) const { return size_[i]; }
  std::int64_t offset(std::size_t i) const { return offset_[i]; }
  std::int64_t arena() const { return top_.empty() ? 0 : top_.back(); }

  // The placement, to go back to after a move that made it worse.
  struct Saved {
    std::vector<std::int64_t> offset, top;
  };
  void save(Saved& to) const { to.offset = offset_, to.top = top_; }
  void restore(const Saved& from) { offset_ = from.offset, top_ = from.top; }

  // Places `order` from position `from` on; the buffers before it keep their offsets (the
  // order and the fit must not have changed before `from` since the last call).
  void place(const std::vector<std::size_t>& order, std::size_t from, Fit fit) {
    fit_ = fit;
    for (std::size_t k = from; k < order.size(); ++k) offset_[order[k]] = kUnplaced;
    top_.resize(order.size());
    std::int64_t arena = from == 0 ? 0 : top_[from - 1];
    for (std::size_t k = from; k < order.size(); ++k) {
      const std::size_t i = order[k];
      offset_[i] = size_[i] == 0 ? 0 : gap_for(i);  // zero bytes conflict with nothing
      top_[k] = arena = std::max(arena, offset_[i] + size_[i]);
    }
  }

 private:
  static constexpr std::int64_t kUnplaced = -1;

  std::int64_t gap_for(std::size_t i) {
    taken_.clear();
    for (const std::size_t j : meets_[i])
      if (offset_[j] != kUnplaced) taken_.push_back({offset_[j], offset_[j] + size_[j]});
    std::sort(taken_.begin(), taken_.end());
    std::int64_t chosen = -1, chosen_gap = 0;
    std::int64_t top = 0;  // the end of everything taken so far, walking upwards
    for (const Interval& t : taken_) {
      const std::int64_t gap = t.begin - top;
      if (gap >= size_[i] && (chosen < 0 || (fit_ == Fit::Best && gap < chosen_gap))) {
        chosen = top;
        chosen_gap = gap;
        if (fit_ == Fit::First || gap == size_[i]) break;  // cannot fit tighter
      }
      top = std::max(top, t.end);
    }
    return chosen >= 0 ? chosen : top;
  }

  Fit fit_ = Fit::Best;
  std::vector<std::int64_t> size_, offset_;
  std::vector<std::vector<std::size_t>> meets_;  // the buffers live at the same time as each
  std::vector<std::int64_t> top_;                // per order position, the arena so far
  std::vector<Interval> taken_;                  // scratch
};

// What the search minimizes: the arena, then the bytes of the buffers that reach its top
// (fewer is closer to lowering it, and lets the search walk across orders of equal arena).
// Those buffers go into `tops`.
std::pair<std::int64_t, std::int64_t> score(const Placer& p, std::size_t buffers, std::vector<std::size_t>& tops) {
  tops.clear();
  std::int64_t at_top = 0;
  for (std::size_t i = 0; i < buffers; ++i)
    if (p.size(i) > 0 && p.offset(i) + p.size(i) == p.arena()) tops.push_back(i), at_top += p.size(i);
  return {p.arena(), at_top};
}

// Local search over the order from `order` (placed in `p`): move a buffer that reaches the
// arena's top, or one live beside it, to an earlier position (anywhere, for the first),
// chosen by a seeded generator; keep the move unless the score gets worse. Stops after
// `moves` moves or at `peak`.
void improve(Placer& p, std::vector<std::size_t>& order, Fit fit, int moves, std::int64_t peak) {
  std::mt19937 random(20221207);
  const std::size_t n = order.size();
  std::vector<std::size_t> tops, tried_tops, tried;
  auto current = score(p, n, tops);
  Placer::Saved saved;
  for (int move = 0; move < moves && p.arena() > peak; ++move) {
    std::size_t pick = tops[random() % tops.size()];
    if (random() % 2 == 0 && !p.meets(pick).empty()) pick = p.meets(pick)[random() % p.meets(pick).size()];
    const auto pos = static_cast<std::size_t>(std::find(order.begin(), order.end(), pick) - order.begin());
    const std::size_t to = pos > 0 ? random() % pos : random() % n;
    tried = order;
    tried.erase(tried.begin() + static_cast<std::ptrdiff_t>(pos));
    tried.insert(tried.begin() + static_cast<std::ptrdiff_t>(to), pick);
    p.save(saved);
    p.place(tried, std::min(pos, to), fit);
    const auto s = score(p, n, tried_tops);
    if (s <= current) {
      current = s;
      order.swap(tried);
      tops.swap(tried_tops);
    } else {
      p.restore(saved);
    }
  }
}

}  // namespace

MemoryPlan plan_memory_greedy(const std::vector<BufferLife>& all, std::int64_t alignment, int search_moves) {
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
  best.arena_bytes = -1;
  Placer p(buffers, alignment);
  const int starts = static_cast<int>(orders.size()) * 2;
  for (int start = 0; start < starts && best.arena_bytes != peak; ++start) {
    std::vector<std::size_t> order = orders[static_cast<std::size_t>(start / 2)];
    const Fit fit = start % 2 == 0 ? Fit::Best : Fit::First;
    p.place(order, 0, fit);
    // The moves shared out evenly among the starts.
    const int moves = search_moves / starts + (start < search_moves % starts ? 1 : 0);
    improve(p, order, fit, moves, peak);
    if (best.arena_bytes < 0 || p.arena() < best.arena_bytes) {
      best.arena_bytes = p.arena();
      best.offsets.resize(buffers.size());
      for (std::size_t i = 0; i < buffers.size(); ++i) best.offsets[i] = p.offset(i);
    }
  }
  best.arena_bytes = std::max<std::int64_t>(best.arena_bytes, 0);
  best.peak_live_bytes = peak;
  return chains.per_buffer(best);
}

}  // namespace poet
