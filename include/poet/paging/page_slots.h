// Where in the page file each stored copy lives. Slots start on block boundaries (so the
// file also works opened with O_DIRECT) and span whole blocks; a slot given back is reused
// for a later copy that fits, so a training loop that pages the same tensors every step
// keeps the file at the size of one step's paged working set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace poet::paging {

struct Slot {
  std::uint64_t offset = 0;
  std::uint64_t capacity = 0;  // bytes, a multiple of the block size
};

class SlotAllocator {
 public:
  explicit SlotAllocator(std::uint64_t block_size);

  // A slot of at least `bytes` (at least one block): the smallest free one that fits, or a
  // new one at the end of the file.
  Slot allocate(std::uint64_t bytes);
  void release(Slot slot);

  std::uint64_t block_size() const { return block_size_; }
  // The end of the last slot ever handed out: how large the file can grow.
  std::uint64_t high_water() const { return end_; }

 private:
  std::uint64_t block_size_;
  std::uint64_t end_ = 0;
  std::vector<Slot> free_;
};

}  // namespace poet::paging
