// Which of a pager's transfers may move side by side. A transfer asked for later must wait
// for an earlier one still running only where their order shows in the bytes: one writes
// bytes (of RAM or of the page file) that the other reads or writes. Everything else may
// run at once, which a storage device serves faster than one request at a time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "poet/graph/graph.h"
#include "poet/paging/file_pager_faults.h"

namespace poet::paging {

struct Transfer {
  PageTransfer kind = PageTransfer::kOut;
  NodeId node = -1;
  std::uint64_t ticket = 0;    // the order it was asked for in, from 1
  std::uint64_t offset = 0;    // of its copy in the page file, block-aligned
  std::byte* bytes = nullptr;  // read from for a page-out, written to for a page-in
  std::size_t size = 0;
};

// Whether `later` must not start before `earlier` has ended. A page-out reads RAM and
// writes the file; a page-in reads the file and writes RAM. One tensor's transfers also
// keep their order whenever one of them writes its copy (even an empty one), because a
// page-in checks the checksum of the copy written last.
bool must_follow(const Transfer& later, const Transfer& earlier);

}  // namespace poet::paging
