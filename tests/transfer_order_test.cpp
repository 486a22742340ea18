// paging::must_follow: which transfers a FilePager may run side by side. Every case names
// the bytes two transfers share; the end-to-end check is FilePagerSideBySide.
#include "poet/paging/transfer_order.h"

#include <gtest/gtest.h>

#include <array>

namespace poet::paging {
namespace {

// RAM that the transfers below point into; only addresses are compared.
std::array<std::byte, 1 << 16> ram_for_order_cases;

Transfer page_out(NodeId node, std::size_t ram_at, std::size_t size, std::uint64_t file_at) {
  return {PageTransfer::kOut, node, 0, file_at, ram_for_order_cases.data() + ram_at, size};
}
Transfer page_in(NodeId node, std::size_t ram_at, std::size_t size, std::uint64_t file_at) {
  return {PageTransfer::kIn, node, 0, file_at, ram_for_order_cases.data() + ram_at, size};
}

TEST(TransferOrder, TransfersThatOnlyShareBytesBothReadMoveSideBySide) {
  // Two page-outs of one buffer (two tensors viewing the same bytes) into different slots.
  EXPECT_FALSE(must_follow(page_out(2, 0, 4096, 8192), page_out(1, 0, 4096, 0)));
  // Two page-ins of one copy into different buffers.
  EXPECT_FALSE(must_follow(page_in(1, 4096, 4096, 0), page_in(1, 0, 4096, 0)));
  // Nothing shared at all.
  EXPECT_FALSE(must_follow(page_in(2, 8192, 100, 4096), page_out(1, 0, 100, 0)));
  EXPECT_FALSE(must_follow(page_out(2, 8192, 100, 4096), page_in(1, 0, 100, 0)));
}

TEST(TransferOrder, APageInWaitsForTransfersOfTheRamItFills) {
  EXPECT_TRUE(must_follow(page_in(2, 100, 200, 4096), page_out(1, 0, 101, 0))) << "a page-out still reads byte 100";
  EXPECT_TRUE(must_follow(page_in(2, 0, 200, 4096), page_in(1, 199, 10, 0))) << "an earlier page-in fills byte 199";
  EXPECT_TRUE(must_follow(page_out(2, 0, 200, 4096), page_in(1, 199, 10, 0))) << "a page-out reads what a page-in fills";
  EXPECT_FALSE(must_follow(page_in(2, 100, 200, 4096), page_out(1, 0, 100, 0))) << "adjacent, not shared";
}

TEST(TransferOrder, APageOutWaitsForTransfersOfTheBlocksItWrites) {
  // Another tensor's slot, reused while that tensor's page-in still reads it.
  EXPECT_TRUE(must_follow(page_out(2, 0, 4096, 8192), page_in(1, 8192, 4096, 8192)));
  // A copy of 4097 bytes fills two blocks; the next slot starts after them.
  EXPECT_TRUE(must_follow(page_out(2, 0, 10, 4096), page_out(1, 8192, 4097, 0)));
  EXPECT_FALSE(must_follow(page_out(2, 0, 10, 8192), page_out(1, 8192, 4097, 0)));
  EXPECT_FALSE(must_follow(page_out(2, 0, 10, 4096), page_out(1, 8192, 4096, 0)));
}

TEST(TransferOrder, OneTensorsTransfersKeepTheirOrderAroundEveryCopyWritten) {
  EXPECT_TRUE(must_follow(page_in(1, 0, 64, 0), page_out(1, 4096, 64, 0))) << "reads the copy being written";
  EXPECT_TRUE(must_follow(page_out(1, 0, 64, 0), page_in(1, 4096, 64, 0))) << "overwrites the copy being read";
  EXPECT_TRUE(must_follow(page_out(1, 0, 64, 0), page_out(1, 4096, 64, 0))) << "the later copy must win";
  // Empty copies touch no byte, but a page-in checks the checksum of the copy written last.
  EXPECT_TRUE(must_follow(page_in(1, 0, 0, 0), page_out(1, 0, 0, 0)));
  // A copy moved to a larger slot: still the same tensor.
  EXPECT_TRUE(must_follow(page_in(1, 0, 9000, 16384), page_out(1, 0, 9000, 16384)));
}

}  // namespace
}  // namespace poet::paging
