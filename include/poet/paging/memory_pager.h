// A Pager that keeps paged-out tensors in ordinary memory and copies synchronously: the
// executor's default until the file pager lands, and the reference the file pager's
// results are compared with. It measures nothing about storage; it only makes paging
// plans runnable and checkable.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "poet/paging/pager.h"

namespace poet {

class MemoryPager final : public Pager {
 public:
  // `node_count` sizes the table of stored copies up front; a larger node id grows it.
  explicit MemoryPager(std::size_t node_count = 0);

  // The copy is kept per node and reused, so after the first step a page-out of the same
  // size allocates nothing.
  void start_page_out(NodeId node, std::span<const std::byte> data) override;
  // Throws PagerError if `node` was never paged out or `into` has another size.
  void start_page_in(NodeId node, std::span<std::byte> into) override;
  void wait(NodeId) override {}
  void wait_all() override {}
  std::size_t bytes_paged_out() const override { return bytes_out_; }
  std::size_t bytes_paged_in() const override { return bytes_in_; }

 private:
  struct StoredCopy {
    std::vector<std::byte> bytes;
    bool present = false;
  };
  std::vector<StoredCopy> stored_;
  std::size_t bytes_out_ = 0, bytes_in_ = 0;
};

}  // namespace poet
