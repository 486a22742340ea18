// What the executor waits for before reading a tensor or reusing bytes, and what it does
// not: a tensor being paged out is read meanwhile, and issuing a transfer never waits.
#include "../src/runtime/transfer_tracker.h"

#include <gtest/gtest.h>

#include <vector>

namespace poet {
namespace {

// Records which nodes were waited for; transfers do nothing.
class WaitLog final : public Pager {
 public:
  void start_page_out(NodeId, std::span<const std::byte>) override {}
  void start_page_in(NodeId, std::span<std::byte>) override {}
  void wait(NodeId node) override { waited.push_back(node); }
  void wait_all() override {}
  std::size_t bytes_paged_out() const override { return 0; }
  std::size_t bytes_paged_in() const override { return 0; }
  std::vector<NodeId> waited;
};

TEST(TransferTracker, ReadingATensorBeingPagedOutDoesNotWait) {
  WaitLog pager;
  runtime::detail::TransferTracker t(pager, 4);
  t.started_page_out(1);
  t.before_read(1);
  EXPECT_TRUE(pager.waited.empty()) << "a page-out only reads the tensor; computes may read it meanwhile";
}

TEST(TransferTracker, ReadingATensorBeingPagedInWaitsForIt) {
  WaitLog pager;
  runtime::detail::TransferTracker t(pager, 4);
  t.started_page_out(2);
  t.started_page_in(2);
  t.before_read(2);
  EXPECT_EQ(pager.waited, std::vector<NodeId>{2});
  t.before_read(2);  // arrived: no second wait
  EXPECT_EQ(pager.waited.size(), 1u);
}

TEST(TransferTracker, ReusingBytesAPageOutStillReadsWaitsForIt) {
  WaitLog pager;
  runtime::detail::TransferTracker t(pager, 4);
  t.started_page_out(0);
  t.released(0, 100, 200);
  t.claim(0, 100);  // next to it: no wait
  EXPECT_TRUE(pager.waited.empty());
  t.claim(150, 300);
  EXPECT_EQ(pager.waited, std::vector<NodeId>{0});
  t.claim(150, 300);  // done: the range is free
  EXPECT_EQ(pager.waited.size(), 1u);
}

TEST(TransferTracker, BusyRangesBeyondTheTableWaitForTheOldestInsteadOfGrowing) {
  WaitLog pager;
  runtime::detail::TransferTracker t(pager, 2);
  t.started_page_out(0);
  t.released(0, 0, 10);
  t.started_page_out(1);
  t.released(1, 10, 20);
  t.started_page_out(0);  // node 0 again (recomputed, paged out again)
  t.released(0, 20, 30);
  EXPECT_EQ(pager.waited, std::vector<NodeId>{0});
  t.claim(0, 30);  // node 0's ranges went with its wait; node 1's is left
  EXPECT_EQ(pager.waited, (std::vector<NodeId>{0, 1}));
}

}  // namespace
}  // namespace poet
