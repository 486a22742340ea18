#include <algorithm>

#include "poet/paging/page_slots.h"
#include "poet/util/error.h"

namespace poet::paging {

SlotAllocator::SlotAllocator(std::uint64_t block_size) : block_size_(block_size) {
  POET_CHECK(block_size > 0 && (block_size & (block_size - 1)) == 0, "block size must be a power of two");
}

Slot SlotAllocator::allocate(std::uint64_t bytes) {
  const std::uint64_t needed = std::max<std::uint64_t>(block_size_, (bytes + block_size_ - 1) & ~(block_size_ - 1));
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->capacity >= needed && (best == free_.end() || it->capacity < best->capacity)) best = it;
  if (best != free_.end()) {
    const Slot slot = *best;
    *best = free_.back();
    free_.pop_back();
    return slot;
  }
  const Slot slot{end_, needed};
  end_ += needed;
  return slot;
}

void SlotAllocator::release(Slot slot) {
  if (slot.capacity > 0) free_.push_back(slot);
}

}  // namespace poet::paging
