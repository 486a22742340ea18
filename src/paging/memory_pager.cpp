#include "poet/paging/memory_pager.h"

#include <fmt/format.h>

#include <algorithm>

namespace poet {

MemoryPager::MemoryPager(std::size_t node_count) : stored_(node_count) {}

void MemoryPager::start_page_out(NodeId node, std::span<const std::byte> data) {
  if (node < 0) throw PagerError(fmt::format("page-out of node {}: not a node id", node));
  if (static_cast<std::size_t>(node) >= stored_.size()) stored_.resize(static_cast<std::size_t>(node) + 1);
  StoredCopy& copy = stored_[static_cast<std::size_t>(node)];
  copy.bytes.assign(data.begin(), data.end());  // no reallocation once the capacity is there
  copy.present = true;
  bytes_out_ += data.size();
}

void MemoryPager::start_page_in(NodeId node, std::span<std::byte> into) {
  if (node < 0 || static_cast<std::size_t>(node) >= stored_.size() || !stored_[static_cast<std::size_t>(node)].present)
    throw PagerError(
        fmt::format("page-in of node {}: it was never paged out; the plan must page a tensor out "
                    "before paging it in",
                    node));
  const StoredCopy& copy = stored_[static_cast<std::size_t>(node)];
  if (copy.bytes.size() != into.size())
    throw PagerError(
        fmt::format("page-in of node {}: {} bytes stored but {} requested; page-ins must use the size "
                    "the tensor was paged out with",
                    node, copy.bytes.size(), into.size()));
  std::copy(copy.bytes.begin(), copy.bytes.end(), into.begin());
  bytes_in_ += into.size();
}

}  // namespace poet
