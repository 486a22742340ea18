#include "poet/paging/transfer_order.h"

#include <algorithm>

#include "poet/paging/page_file.h"

namespace poet::paging {
namespace {

bool overlap(std::uint64_t begin_a, std::uint64_t end_a, std::uint64_t begin_b, std::uint64_t end_b) {
  return begin_a < end_b && begin_b < end_a;
}

std::uint64_t ram_begin(const Transfer& t) { return reinterpret_cast<std::uintptr_t>(t.bytes); }

// A copy fills whole blocks of the file (O_DIRECT pads it); an empty one still has a block.
std::uint64_t file_end(const Transfer& t) {
  constexpr std::uint64_t block = PageFile::kBlockSize;
  return t.offset + std::max<std::uint64_t>((t.size + block - 1) / block, 1) * block;
}

}  // namespace

bool must_follow(const Transfer& later, const Transfer& earlier) {
  const bool later_in = later.kind == PageTransfer::kIn, earlier_in = earlier.kind == PageTransfer::kIn;
  if ((later_in || earlier_in) &&
      overlap(ram_begin(later), ram_begin(later) + later.size, ram_begin(earlier), ram_begin(earlier) + earlier.size))
    return true;
  if (later_in && earlier_in) return false;  // both only read the file
  return later.node == earlier.node || overlap(later.offset, file_end(later), earlier.offset, file_end(earlier));
}

}  // namespace poet::paging
