// Static memory plan: every buffer of a plan gets an offset in one arena, so that the plan
// runs with no allocator at run time (as TensorFlow Lite Micro's planners do). POET's model
// treats memory as fungible; a device's arena also pays for fragmentation, which this plan
// measures: arena_bytes against the peak of live bytes.
//
// Sizes are rounded up to the alignment everywhere (offsets, arena, peak), so the
// fragmentation measured is that of the placement alone, not of the rounding.
//
// Files: memory_plan_greedy.cpp (the planner), memory_plan_linear.cpp (the oracle),
// memory_plan_check.cpp (peak, overlap check, ASCII dump), memory_plan_order.cpp (the
// lifetimes in plan order that every arena is planned over).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "poet/plan/buffer_life.h"

namespace poet {

struct MemoryPlan {
  std::vector<std::int64_t> offsets;  // one per buffer, in SimulationResult::buffers order
  std::int64_t arena_bytes = 0;
  std::int64_t peak_live_bytes = 0;   // the most bytes live at once (aligned sizes)
  double fragmentation() const {      // arena / peak - 1
    return peak_live_bytes == 0 ? 0.0 : static_cast<double>(arena_bytes) / static_cast<double>(peak_live_bytes) - 1;
  }
};

// `bytes` rounded up to a multiple of `alignment` (> 0).
inline std::int64_t align_up(std::int64_t bytes, std::int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// Two buffers need distinct bytes iff both hold bytes and their [alloc, release) ranks meet.
inline bool live_together(const BufferLife& a, const BufferLife& b) {
  return a.bytes > 0 && b.bytes > 0 && a.alloc_rank < b.release_rank && b.alloc_rank < a.release_rank;
}

// Where a buffer computed in place over another (BufferLife::in_place_of) may lie: on
// exactly its bytes, or apart from them. A kernel in place reads each element of its input
// before it writes the same element of its output; bytes shared at a shift it would read
// after overwriting them.
inline bool in_place_placement_ok(std::int64_t offset, std::int64_t bytes, std::int64_t taken_offset,
                                  std::int64_t taken_bytes) {
  return offset == taken_offset || offset >= taken_offset + taken_bytes || taken_offset >= offset + bytes;
}

// `buffers` with their ranks set to plan order, [created_by, released_by), instead of the
// simulator's time order. The executor and a device run instructions in plan order and wait
// for a transfer still touching bytes they reuse; in time order a page-in that waits for
// the bus starts after the free of a later instruction, so an arena planned over time
// order gives its bytes to a tensor still live in plan order. Plan every arena over these
// (lower() holds some longer still: lower.h's in_plan_order_until_transfers_end).
std::vector<BufferLife> in_plan_order(std::vector<BufferLife> buffers);

// A compute in place shares its input's bytes (BufferLife::in_place_of), so the planners
// place each chain of such buffers as one: from its first allocation to its last release,
// of its largest size. `of_chains` planned over `chains` gives every buffer its chain's offset.
struct InPlaceChains {
  std::vector<BufferLife> chains;     // a buffer taken by none starts one; nodes are its first's
  std::vector<std::size_t> chain_of;  // per buffer, its chain's index
  MemoryPlan per_buffer(const MemoryPlan& of_chains) const;
};
// Throws InputError for a buffer taking one that does not come before it.
InPlaceChains in_place_chains(const std::vector<BufferLife>& buffers);

// The most aligned bytes live at once (a sweep over allocation and release ranks): the
// lower bound of any arena.
std::int64_t peak_live_bytes(const std::vector<BufferLife>& buffers, std::int64_t alignment = 16);

// Best fit by size, like TFLM's greedy planner: buffers in decreasing size (ties: earlier
// allocation first); each goes into the smallest gap between the already-placed buffers
// that are live at the same time, or on top of them. Zero-byte buffers get offset 0.
// Because one order is not best for every plan, it also starts from other orders (longest
// lifetime first, largest size x lifetime first, allocation order, latest release first),
// each with best and with first fit: 10 starts. From each, a local search over the order
// makes `search_moves` / 10 moves: a buffer reaching the arena's top, or one live beside
// it, moves earlier in the order (chosen by a seeded generator: deterministic), kept unless
// the arena, or at an equal arena the bytes reaching its top, grow. It keeps the smallest
// arena, and stops once that meets the peak of live bytes. Measured on the plans of
// mobilenet_v2, resnet18_cifar and vgg16_cifar whose arenas were 0.6-7.9% above their live
// peak, the search takes them to 0-0.62% (docs/BENCHMARKS.md). Not guaranteed optimal (the
// problem is NP-complete). A placement costs O(N D log D) for N buffers that each meet D
// others (a move places again only from the first position it changed). Throws InputError
// if alignment < 1.
inline constexpr int kMemoryPlanSearchMoves = 400;
MemoryPlan plan_memory_greedy(const std::vector<BufferLife>& buffers, std::int64_t alignment = 16,
                              int search_moves = kMemoryPlanSearchMoves);

// Every buffer in its own region, one after another in buffer order: the trivial plan,
// the test oracle and an upper bound (the arena is the sum of aligned sizes). O(N).
MemoryPlan plan_memory_linear(const std::vector<BufferLife>& buffers, std::int64_t alignment = 16);

// A message naming the first two buffers that are live at the same time and overlap in
// the arena (their indices, nodes, byte ranges and live ranks), or a buffer that is
// misaligned or runs past the arena's end; nothing if the plan is sound. O(N^2).
std::optional<std::string> find_overlap(const std::vector<BufferLife>& buffers, const MemoryPlan& plan,
                                        std::int64_t alignment = 16);
// The same check, with the buffer to blame: the misplaced one, or of two that overlap the
// one allocated later (the instruction that creates it is the first that goes wrong).
struct ArenaFault {
  std::size_t buffer;
  std::string message;
};
std::optional<ArenaFault> find_arena_fault(const std::vector<BufferLife>& buffers, const MemoryPlan& plan,
                                           std::int64_t alignment = 16);

// A device holds its whole arena and the fixed memory (parameters, ...) for the whole run.
// Alignment and fragmentation can put the arena above the live peak a RAM budget holds:
// then this says by how much, and what to do; none if they fit in `budget_bytes`.
std::optional<std::string> arena_over_budget(std::int64_t arena_bytes, std::int64_t fixed_bytes,
                                             std::int64_t budget_bytes);

// The arena over time as ASCII art, after TFLM's PrintMemoryPlan: one row per sampled
// event rank (at most `height` rows), the arena scaled to `width` columns; each live
// buffer drawn with the glyph of its index (0-9, a-z, A-Z, repeating), '.' free bytes.
// Each row ends with the live bytes at that rank; the peak row is marked.
std::string memory_plan_ascii(const std::vector<BufferLife>& buffers, const MemoryPlan& plan, int width = 80,
                              int height = 60);

}  // namespace poet
