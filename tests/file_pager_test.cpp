// FilePager: round trips, overlap of transfers with the caller, and every storage fault the
// pager must report (injected, never provoked by timing).
#include "poet/paging/file_pager.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "poet/paging/checksum.h"
#include "poet/paging/page_file.h"
#include "poet/util/error.h"

namespace poet {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Bytes that differ per tensor and per version, so a copy read back from the wrong slot or
// an older page-out is noticed.
std::vector<std::byte> pattern(std::size_t size, NodeId node, int version) {
  std::vector<std::byte> bytes(size);
  std::uint32_t state = 2654435761u * static_cast<std::uint32_t>(node + 1) + 40503u * static_cast<std::uint32_t>(version);
  for (auto& b : bytes) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<std::byte>(state >> 24);
  }
  return bytes;
}

std::uintmax_t size_on_disk(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uintmax_t>(st.st_size) : 0;
}

// `poet` reports a failed transfer as the system's failure (exit 1 with the message), not
// as a bug of its own: a full disk was once "internal error ... (this is a bug in poet)".
static_assert(std::is_base_of_v<IoError, PagerError>);

// Expects `action` to throw PagerError whose message contains every one of `parts`.
template <class Action>
void expect_pager_error(Action action, const std::vector<std::string>& parts) {
  try {
    action();
    ADD_FAILURE() << "expected a PagerError";
  } catch (const PagerError& e) {
    const std::string message = e.what();
    // SHOW_PAGER_ERRORS=1 prints every message, to read them as a user would.
    if (std::getenv("SHOW_PAGER_ERRORS")) std::cout << "  " << message << "\n";
    for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

// A hook that holds the first transfer of one tensor until the test releases them. The waits
// have no time limit, so that a slow machine cannot fail the test: a pager that waits for the
// held transfer where it should not never returns, and ctest's timeout fails the test.
class TransferGate {
 public:
  explicit TransferGate(NodeId held) : held_(held), released_(release_.get_future().share()) {}
  std::function<void(NodeId, PageTransfer)> hook() {
    return [this](NodeId node, PageTransfer) {
      if (node != held_ || entered_once_.exchange(true)) return;
      entered_.set_value();
      released_.wait();
    };
  }
  void wait_until_entered() { entered_.get_future().wait(); }
  void release() { release_.set_value(); }

 private:
  NodeId held_;
  std::promise<void> entered_;
  std::promise<void> release_;
  std::shared_future<void> released_;
  std::atomic<bool> entered_once_{false};
};

namespace {
std::uint32_t zlib_crc32(std::uint32_t crc, std::span<const std::byte> bytes) {
  return static_cast<std::uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}
}  // namespace

// The pager's CRC-32 (ISA-L's crc32_gzip_refl, folded with carry-less multiplies where the
// CPU has them) is zlib's, so files written before still verify: every length around the
// kernels' block sizes, every alignment, continued over pieces split anywhere, and through
// crc32_of (the checkpoint files' checksum).
TEST(PageFileChecksum, Crc32UpdateEqualsZlibsCrc32ForEveryLengthAlignmentAndSplit) {
  const auto bytes = pattern(70000, 5, 0);
  for (std::size_t offset = 0; offset < 17; ++offset)
    for (std::size_t size = 0; size < 700; size += offset % 2 ? 1 : 7) {
      const std::span<const std::byte> data(bytes.data() + offset, size);
      const std::uint32_t expected = zlib_crc32(0, data);
      ASSERT_EQ(paging::crc32_update(0, data), expected) << "offset " << offset << ", size " << size;
      ASSERT_EQ(paging::crc32_of(data), expected) << "offset " << offset << ", size " << size;
      const std::size_t split = size * offset / 17;
      ASSERT_EQ(paging::crc32_update(paging::crc32_update(0, data.first(split)), data.subspan(split)), expected)
          << "offset " << offset << ", size " << size << ", split at " << split;
      ASSERT_EQ(paging::crc32_update(0x9E3779B9u, data), zlib_crc32(0x9E3779B9u, data))
          << "continued from another CRC, offset " << offset << ", size " << size;
    }
  const std::span<const std::byte> all(bytes.data() + 3, bytes.size() - 3);
  EXPECT_EQ(paging::crc32_update(0, all), zlib_crc32(0, all));
  EXPECT_EQ(paging::crc32_of(all), zlib_crc32(0, all));
  const std::byte check[] = {std::byte{'1'}, std::byte{'2'}, std::byte{'3'}, std::byte{'4'}, std::byte{'5'},
                             std::byte{'6'}, std::byte{'7'}, std::byte{'8'}, std::byte{'9'}};
  EXPECT_EQ(paging::crc32_update(0, check), 0xCBF43926u) << "the CRC-32 check value";
  EXPECT_EQ(paging::crc32_of(check), 0xCBF43926u) << "the CRC-32 check value";
}

class FilePagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name_template = (fs::path(::testing::TempDir()) / "poet-pager-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(name_template.data()), nullptr);
    dir_ = name_template;
  }
  void TearDown() override { fs::remove_all(dir_); }

  FilePagerOptions options_in_dir(bool direct_io = false) {
    FilePagerOptions options;
    options.path = dir_.string();
    options.direct_io = direct_io;
    return options;
  }
  // Two I/O threads; tensor 1's transfers held at `gate`, `entered` set when tensor 2's
  // begins. `gate` and `entered` must outlive the pager.
  FilePagerOptions side_by_side_options(TransferGate& gate, std::promise<void>& entered) {
    FilePagerOptions options = options_in_dir();
    options.io_threads = 2;
    options.faults.before_transfer = [&entered, hold = gate.hook()](NodeId node, PageTransfer kind) {
      if (node == 2) entered.set_value();
      hold(node, kind);
    };
    return options;
  }
  bool dir_is_empty() const { return fs::is_empty(dir_); }

  fs::path dir_;
};

class FilePagerRoundTrip : public FilePagerTest, public ::testing::WithParamInterface<bool> {};

TEST_P(FilePagerRoundTrip, TensorsOfManySizesSurviveInterleavedPagingAndOverwrites) {
  FilePager pager(options_in_dir(/*direct_io=*/GetParam()));
  std::cout << "  page file " << pager.path() << (pager.uses_direct_io() ? " with" : " without") << " O_DIRECT\n";
  // 9 MiB + 5: several bounce buffers / checksum chunks, the last one padded.
  const std::vector<std::size_t> sizes = {0, 1, 3, 4095, 4096, 4097, 65536 + 13, kMiB, 4 * kMiB, 9 * kMiB + 5};
  std::map<NodeId, std::vector<std::byte>> sent;
  std::size_t out = 0, in = 0;

  // Every tensor out, waiting for none, so many transfers are queued at once.
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto node = static_cast<NodeId>(3 * i + 1);
    sent[node] = pattern(sizes[i], node, 0);
    pager.start_page_out(node, sent[node]);
    out += sizes[i];
  }
  // Read back every other one while the rest may still be in flight.
  std::map<NodeId, std::vector<std::byte>> back;
  for (auto& [node, bytes] : sent) {
    if (node % 2 == 0) continue;
    pager.wait(node);
    back[node].resize(bytes.size());
    pager.start_page_in(node, back[node]);
    in += bytes.size();
  }
  pager.wait_all();
  for (auto& [node, bytes] : back) EXPECT_EQ(bytes, sent[node]) << "tensor " << node;

  // Overwrite: the same size (the slot is reused), a smaller and a larger copy.
  const std::uint64_t capacity_before = pager.file_capacity();
  sent[1] = pattern(1, 1, 1);            // was empty
  sent[4] = pattern(3, 4, 1);
  sent[13] = pattern(2, 13, 1);          // was 4096 bytes
  sent[10] = pattern(3 * kMiB, 10, 1);   // was 4095 bytes
  for (NodeId node : {1, 4, 13, 10}) {
    pager.start_page_out(node, sent[node]);
    out += sent[node].size();
  }
  // A page-in queued right behind its page-out, without a wait between, reads the new copy.
  std::map<NodeId, std::vector<std::byte>> again;
  for (auto& [node, bytes] : sent) {
    again[node].resize(bytes.size());
    pager.start_page_in(node, again[node]);
    in += bytes.size();
  }
  for (auto& [node, bytes] : sent) {
    pager.wait(node);
    EXPECT_EQ(again[node], bytes) << "tensor " << node;
  }
  EXPECT_EQ(pager.bytes_paged_out(), out);
  EXPECT_EQ(pager.bytes_paged_in(), in);
  EXPECT_GT(pager.file_capacity(), capacity_before) << "the 3 MiB copy needs a new slot";
}

INSTANTIATE_TEST_SUITE_P(FilePager, FilePagerRoundTrip, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "DirectIo" : "Buffered"; });

TEST_F(FilePagerTest, PagingTheSameTensorAgainReusesItsSlot) {
  FilePager pager(options_in_dir());
  auto a = pattern(10000, 1, 0), b = pattern(20000, 2, 0);
  pager.start_page_out(1, a);
  pager.start_page_out(2, b);
  pager.wait_all();
  const std::uint64_t capacity = pager.file_capacity();
  for (int step = 1; step < 5; ++step) {
    a = pattern(10000, 1, step);
    pager.start_page_out(1, a);
    pager.start_page_out(2, b);
    pager.wait_all();
  }
  EXPECT_EQ(pager.file_capacity(), capacity);
  EXPECT_LE(size_on_disk(pager.path()), capacity);
}

// What a plan's tensors make the file grow to, stated before the first step, and a file
// system without room for it refused then (poet train checks this, not a page-out).
// What train checks the disk's room against (util/disk_room.h) before its first step.
TEST_F(FilePagerTest, TheFileAPlanNeedsIsKnownBeforehand) {
  FilePager pager(options_in_dir());
  const std::vector<std::uint64_t> sizes{10000, 20000, 1};
  auto a = pattern(10000, 1, 0), b = pattern(20000, 2, 0), c = pattern(1, 3, 0);
  pager.start_page_out(1, a);
  pager.start_page_out(2, b);
  pager.start_page_out(3, c);
  pager.wait_all();
  EXPECT_EQ(FilePager::file_bytes_for(sizes), pager.file_capacity());
}

TEST_F(FilePagerTest, StartPageOutReturnsBeforeTheDataIsOnDisk) {
  TransferGate gate(/*held=*/5);
  FilePagerOptions options = options_in_dir();
  options.faults.before_transfer = gate.hook();
  FilePager pager(options);
  const auto data = pattern(4 * kMiB, 5, 0);
  pager.start_page_out(5, data);  // returns although the I/O thread is held mid-transfer
  gate.wait_until_entered();
  EXPECT_EQ(pager.bytes_paged_out(), 0u);
  EXPECT_EQ(size_on_disk(pager.path()), paging::PageFile::kHeaderBytes);  // the header only
  gate.release();
  pager.wait(5);
  EXPECT_EQ(pager.bytes_paged_out(), 4 * kMiB);
  EXPECT_GE(size_on_disk(pager.path()), paging::PageFile::kHeaderBytes + 4 * kMiB);
}

// How long storage was busy with a step's transfers, against the simulator's bus
// (train::PredictionRow::measured_storage_s): spans of transfers side by side count once.
TEST(BusyTime, CountsTheUnionOfTheSpansOnceEachEnds) {
  using namespace std::chrono_literals;
  const paging::BusyTime::Clock::time_point t0{};
  paging::BusyTime busy;
  busy.began(t0);
  busy.began(t0 + 2ms);  // beside the first
  busy.ended(t0 + 5ms);
  EXPECT_EQ(busy.seconds(), 0);  // the first still moves
  busy.ended(t0 + 10ms);
  EXPECT_DOUBLE_EQ(busy.seconds(), 0.010);
  busy.began(t0 + 20ms);  // idle from 10 to 20 ms
  busy.ended(t0 + 21ms);
  EXPECT_DOUBLE_EQ(busy.seconds(), 0.011);
}

TEST_F(FilePagerTest, StorageBusyCountsATransferFromItsStartToItsEnd) {
  TransferGate gate(/*held=*/5);
  FilePagerOptions options = options_in_dir();
  options.faults.before_transfer = gate.hook();
  FilePager pager(options);
  const auto data = pattern(kMiB, 5, 0);
  pager.start_page_out(5, data);
  gate.wait_until_entered();
  constexpr double kHeldS = 0.02;
  std::this_thread::sleep_for(std::chrono::duration<double>(kHeldS));
  EXPECT_EQ(pager.seconds_storage_busy(), 0);  // still moving
  gate.release();
  pager.wait(5);
  const double busy = pager.seconds_storage_busy();
  EXPECT_GE(busy, kHeldS);  // held on storage at least that long
  std::vector<std::byte> back(data.size());
  pager.start_page_in(5, back);
  pager.wait(5);
  EXPECT_GT(pager.seconds_storage_busy(), busy);
}

TEST_F(FilePagerTest, WaitReturnsOnceItsOwnTransferIsDoneWhileALaterOneIsHeld) {
  TransferGate gate(/*held=*/2);
  FilePagerOptions options = options_in_dir();
  options.faults.before_transfer = gate.hook();
  FilePager pager(options);
  const auto a = pattern(kMiB, 1, 0), b = pattern(kMiB, 2, 0);
  pager.start_page_out(1, a);
  pager.start_page_out(2, b);
  pager.wait(1);  // if this waited for tensor 2 too, it would never return
  gate.release();
  pager.wait(2);
  EXPECT_EQ(pager.bytes_paged_out(), 2 * kMiB);
}

TEST_F(FilePagerTest, TransfersOfDifferentTensorsMoveSideBySide) {
  TransferGate gate(/*held=*/1);
  std::promise<void> second_entered;
  FilePager pager(side_by_side_options(gate, second_entered));
  const auto a = pattern(kMiB, 1, 0), b = pattern(kMiB, 2, 0);
  pager.start_page_out(1, a);
  pager.start_page_out(2, b);
  second_entered.get_future().wait();  // never returns if tensor 2 queued behind the held tensor 1
  gate.release();
  pager.wait_all();
  EXPECT_EQ(pager.bytes_paged_out(), 2 * kMiB);
}

TEST_F(FilePagerTest, ATransferThatRanBesideAnEarlierFailedOneReportsThatFailure) {
  TransferGate gate(/*held=*/1);
  std::promise<void> first_copy_of_2_written;
  int transfers_of_2 = 0;  // touched by one I/O thread at a time: the second follows the first
  FilePagerOptions options = options_in_dir();
  options.io_threads = 2;
  options.faults.fail_write = 1;  // tensor 1's page-out, held until tensor 2's has ended
  options.faults.before_transfer = [&, hold = gate.hook()](NodeId node, PageTransfer kind) {
    if (node == 2 && ++transfers_of_2 == 2) first_copy_of_2_written.set_value();
    hold(node, kind);
  };
  FilePager pager(options);
  const auto a = pattern(100, 1, 0), b = pattern(200, 2, 0);
  pager.start_page_out(1, a);
  pager.start_page_out(2, b);
  pager.start_page_out(2, b);  // starts once the first copy of 2 is written
  first_copy_of_2_written.get_future().wait();
  gate.release();
  expect_pager_error([&] { pager.wait(2); }, {"page-out of tensor 2", "earlier transfer failed", "tensor 1", "full"});
  EXPECT_EQ(pager.bytes_paged_out(), 0u) << "nothing after the failure counts as stored";
  EXPECT_FALSE(fs::exists(pager.path()));
}

TEST_F(FilePagerTest, AFailureDoesNotFailATransferStartedBeforeIt) {
  TransferGate gate(/*held=*/1);
  std::promise<void> second_entered;
  FilePagerOptions options = side_by_side_options(gate, second_entered);
  options.faults.fail_write = 2;  // tensor 2's page-out, while tensor 1's is held
  FilePager pager(options);
  const auto a = pattern(kMiB, 1, 0), b = pattern(kMiB, 2, 0);
  pager.start_page_out(1, a);
  pager.start_page_out(2, b);
  second_entered.get_future().wait();
  // Time for tensor 2's page-out to fail while tensor 1's waits. No verdict depends on it: a
  // pager that keeps this promise passes however long it is.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  gate.release();
  pager.wait(1);  // throws if tensor 2's failure took the file from under tensor 1
  EXPECT_EQ(pager.bytes_paged_out(), kMiB);
  expect_pager_error([&] { pager.wait(2); }, {"page-out of tensor 2", "full"});
  EXPECT_FALSE(fs::exists(pager.path()));
}

class FilePagerSideBySide : public FilePagerTest, public ::testing::WithParamInterface<bool> {};

// Every ordering rule at once: a fixed random program of page-outs from and page-ins into
// overlapping parts of one buffer, with no wait between them, leaves the buffer and the
// copies as running it one transfer at a time would. A correct pager cannot fail this; one
// that broke a rule could still pass by the luck of timing, which transfer_order_test
// does not leave to chance.
TEST_P(FilePagerSideBySide, ARandomProgramEndsAsIfRunOneTransferAtATime) {
  FilePagerOptions options = options_in_dir(/*direct_io=*/GetParam());
  options.io_threads = 4;
  FilePager pager(options);
  constexpr std::size_t kArena = 256 * 1024;
  constexpr std::size_t kBlock = paging::PageFile::kBlockSize;
  // Block-aligned, so that aligned parts move straight between it and the device.
  std::unique_ptr<std::byte, decltype(&std::free)> arena(static_cast<std::byte*>(std::aligned_alloc(kBlock, kArena)),
                                                         &std::free);
  std::vector<std::byte> expected = pattern(kArena, 99, 0);
  std::copy(expected.begin(), expected.end(), arena.get());
  std::map<NodeId, std::vector<std::byte>> stored;  // the copies, run one transfer at a time
  std::mt19937 random(20261129);
  const std::size_t sizes[] = {0, 100, kBlock, kBlock + 904, 4 * kBlock, 40000};
  const auto place = [&](std::size_t size) {
    const std::size_t at = random() % (kArena - size + 1);
    return random() % 2 ? at / kBlock * kBlock : at;  // half of them block-aligned
  };
  for (int op = 0; op < 600; ++op) {
    const auto node = static_cast<NodeId>(random() % 8);
    const auto copy = stored.find(node);
    if (copy == stored.end() || random() % 2) {
      const std::size_t size = sizes[random() % std::size(sizes)], at = place(size);
      stored[node].assign(expected.begin() + static_cast<std::ptrdiff_t>(at),
                          expected.begin() + static_cast<std::ptrdiff_t>(at + size));
      pager.start_page_out(node, {arena.get() + at, size});
    } else {
      const std::size_t size = copy->second.size(), at = place(size);
      std::copy(copy->second.begin(), copy->second.end(), expected.begin() + static_cast<std::ptrdiff_t>(at));
      pager.start_page_in(node, {arena.get() + at, size});
    }
  }
  pager.wait_all();
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), arena.get())) << "the buffer after the program";
  for (const auto& [node, bytes] : stored) {
    std::vector<std::byte> back(bytes.size());
    pager.start_page_in(node, back);
    pager.wait(node);
    EXPECT_EQ(back, bytes) << "the last copy of tensor " << node;
  }
}

INSTANTIATE_TEST_SUITE_P(FilePager, FilePagerSideBySide, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "DirectIo" : "Buffered"; });

TEST_F(FilePagerTest, WaitWithNothingInFlightIsANoOp) {
  FilePager pager(options_in_dir());
  pager.wait(3);
  pager.wait_all();
  EXPECT_EQ(pager.bytes_paged_out(), 0u);
}

class FilePagerWriteFault : public FilePagerTest, public ::testing::WithParamInterface<bool> {};

TEST_P(FilePagerWriteFault, DiskFullNamesTheTensorTheFileAndTheFix) {
  FilePagerOptions options = options_in_dir(GetParam());
  options.faults.fail_write = 2;
  options.faults.write_fault = FaultInjector::WriteFault::kDiskFull;
  FilePager pager(options);
  const std::string path = pager.path();
  const auto a = pattern(kMiB, 7, 0), b = pattern(kMiB, 8, 0);
  pager.start_page_out(7, a);
  pager.start_page_out(8, b);
  pager.wait(7);
  expect_pager_error([&] { pager.wait(8); },
                     {"page-out of tensor 8", path, "full", "No space left on device", "free space on '" + dir_.string(),
                      "choose another place for the page file"});
  expect_pager_error([&] { pager.wait_all(); }, {"tensor 8", "full"});
  EXPECT_FALSE(fs::exists(path)) << "a failed step removes the page file";
}

TEST_P(FilePagerWriteFault, ShortWriteReportsHowMuchWasWritten) {
  FilePagerOptions options = options_in_dir(GetParam());
  options.faults.fail_write = 1;
  options.faults.write_fault = FaultInjector::WriteFault::kShortWrite;
  FilePager pager(options);
  const auto a = pattern(kMiB, 3, 0);
  pager.start_page_out(3, a);
  expect_pager_error([&] { pager.wait(3); },
                     {"page-out of tensor 3", pager.path(), "full", "524288 of 1048576 bytes", "free space on"});
  EXPECT_FALSE(fs::exists(pager.path()));
}

INSTANTIATE_TEST_SUITE_P(FilePager, FilePagerWriteFault, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "DirectIo" : "Buffered"; });

TEST_F(FilePagerTest, WriteIoErrorNamesTheDevice) {
  FilePagerOptions options = options_in_dir();
  options.faults.fail_write = 1;
  options.faults.write_fault = FaultInjector::WriteFault::kIoError;
  FilePager pager(options);
  const auto a = pattern(100, 4, 0);
  pager.start_page_out(4, a);
  expect_pager_error([&] { pager.wait(4); }, {"page-out of tensor 4", pager.path(), "I/O error", "check the device"});
}

TEST_F(FilePagerTest, ReadIoErrorNamesTheTensorAndLeavesNoFile) {
  FilePagerOptions options = options_in_dir();
  options.faults.fail_read = 2;
  FilePager pager(options);
  const std::string path = pager.path();
  const auto a = pattern(5000, 11, 0), b = pattern(6000, 12, 0);
  pager.start_page_out(11, a);
  pager.start_page_out(12, b);
  std::vector<std::byte> a_back(a.size()), b_back(b.size());
  pager.start_page_in(11, a_back);
  pager.start_page_in(12, b_back);
  pager.wait(11);
  EXPECT_EQ(a_back, a);
  expect_pager_error([&] { pager.wait(12); },
                     {"page-in of tensor 12 from '" + path + "'", "I/O error", "Input/output error", "check the device"});
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(FilePagerTest, FileRemovedUnderneathIsDetectedOnPageIn) {
  FilePager pager(options_in_dir());
  const auto a = pattern(3000, 6, 0);
  pager.start_page_out(6, a);
  pager.wait(6);
  ASSERT_EQ(::unlink(pager.path().c_str()), 0);
  std::vector<std::byte> back(a.size());
  pager.start_page_in(6, back);
  expect_pager_error([&] { pager.wait(6); }, {"page-in of tensor 6", pager.path(), "removed while in use", "rerun"});
}

TEST_F(FilePagerTest, FileTruncatedUnderneathIsDetectedOnPageIn) {
  FilePager pager(options_in_dir());
  const auto a = pattern(kMiB, 1, 0), b = pattern(kMiB, 2, 0);
  pager.start_page_out(1, a);
  pager.start_page_out(2, b);
  pager.wait_all();
  // Cuts tensor 2's copy short (the copies follow the file's header block).
  ASSERT_EQ(::truncate(pager.path().c_str(), paging::PageFile::kHeaderBytes + kMiB + 100), 0);
  std::vector<std::byte> a_back(a.size()), b_back(b.size());
  pager.start_page_in(1, a_back);
  pager.start_page_in(2, b_back);
  pager.wait(1);
  EXPECT_EQ(a_back, a);
  expect_pager_error([&] { pager.wait(2); }, {"page-in of tensor 2", pager.path(), "truncated", "rerun"});
  EXPECT_FALSE(fs::exists(pager.path()));
}

// Memory at a block boundary, as the executor's arena gives a paged tensor: O_DIRECT moves
// its whole-block chunks straight between it and the device (no bounce buffer).
struct BlockAligned {
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  explicit BlockAligned(const std::vector<std::byte>& from)
      : size(from.size()),
        memory(static_cast<std::byte*>(std::aligned_alloc(
            paging::PageFile::kBlockSize, (size / paging::PageFile::kBlockSize + 1) * paging::PageFile::kBlockSize))) {
    std::copy(from.begin(), from.end(), memory.get());
  }
  std::span<std::byte> bytes() { return {memory.get(), size}; }
  std::vector<std::byte> copy() const { return {memory.get(), memory.get() + size}; }
  std::size_t size;
  std::unique_ptr<std::byte, Free> memory;
};

TEST_F(FilePagerTest, BlockAlignedTensorsRoundTripStraightFromTheirMemory) {
  FilePager pager(options_in_dir(/*direct_io=*/true));
  std::cout << "  page file " << pager.path() << (pager.uses_direct_io() ? " with" : " without") << " O_DIRECT\n";
  // Whole blocks (one chunk, then four), and 3 MiB + 100: three direct chunks and a tail
  // through the bounce buffer.
  const std::vector<std::size_t> sizes = {4096, 65536, 9 * kMiB, 3 * kMiB + 100};
  std::vector<BlockAligned> sent, back;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    sent.emplace_back(pattern(sizes[i], static_cast<NodeId>(i), 0));
    back.emplace_back(std::vector<std::byte>(sizes[i]));
    pager.start_page_out(static_cast<NodeId>(i), sent[i].bytes());
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) pager.start_page_in(static_cast<NodeId>(i), back[i].bytes());
  pager.wait_all();
  for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(back[i].copy(), sent[i].copy()) << sizes[i] << " bytes";
  EXPECT_EQ(pager.bytes_paged_in(), pager.bytes_paged_out());

  // The checksum still covers what came straight from the device.
  const int fd = ::open(pager.path().c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const std::byte flipped = sent[1].copy()[777] ^ std::byte{0x40};
  ASSERT_EQ(::pwrite(fd, &flipped, 1, paging::PageFile::kHeaderBytes + 4096 + 777), 1);  // tensor 1 follows tensor 0's block
  ::close(fd);
  pager.start_page_in(1, back[1].bytes());
  expect_pager_error([&] { pager.wait(1); }, {"page-in of tensor 1", "checksum mismatch"});
}

TEST_F(FilePagerTest, CorruptedCopyFailsItsChecksum) {
  FilePager pager(options_in_dir());
  const auto a = pattern(4 * kMiB, 9, 0);
  pager.start_page_out(9, a);
  pager.wait(9);
  // Flip one byte deep inside the only copy (which starts after the header block).
  const int fd = ::open(pager.path().c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const std::byte flipped = a[123457] ^ std::byte{0x40};
  ASSERT_EQ(::pwrite(fd, &flipped, 1, paging::PageFile::kHeaderBytes + 123457), 1);
  ::close(fd);
  std::vector<std::byte> back(a.size());
  pager.start_page_in(9, back);
  expect_pager_error([&] { pager.wait(9); }, {"page-in of tensor 9", pager.path(), "checksum mismatch", "CRC-32"});
  EXPECT_FALSE(fs::exists(pager.path()));
}

TEST_F(FilePagerTest, TransfersAfterAFailureDoNotTouchTheFileAndSayWhy) {
  FilePagerOptions options = options_in_dir();
  options.faults.fail_write = 1;
  FilePager pager(options);
  const auto a = pattern(100, 1, 0), b = pattern(200, 2, 0);
  pager.start_page_out(1, a);
  pager.start_page_out(2, b);
  expect_pager_error([&] { pager.wait(2); }, {"page-out of tensor 2", "earlier transfer failed", "tensor 1", "full"});
  expect_pager_error([&] { pager.wait_all(); }, {"page-out of tensor 1", "full"});
  EXPECT_EQ(pager.bytes_paged_out(), 0u);
}

TEST_F(FilePagerTest, DestroyingThePagerRemovesItsFileAfterSuccessOrFailure) {
  std::string path;
  {
    FilePager pager(options_in_dir());
    path = pager.path();
    const auto a = pattern(kMiB, 1, 0);
    pager.start_page_out(1, a);
    pager.wait_all();
    EXPECT_TRUE(fs::exists(path));
  }
  EXPECT_FALSE(fs::exists(path));
  {
    FilePagerOptions options = options_in_dir();
    options.faults.fail_read = 1;
    FilePager pager(options);
    const auto a = pattern(kMiB, 1, 0);
    std::vector<std::byte> back(a.size());
    pager.start_page_out(1, a);
    pager.start_page_in(1, back);
    EXPECT_THROW(pager.wait_all(), PagerError);
  }
  EXPECT_TRUE(dir_is_empty());
}

TEST_F(FilePagerTest, DefaultFileIsAUniqueFileInTheWorkingDirectory) {
  std::string first, second;
  {
    FilePager a, b;
    first = a.path();
    second = b.path();
    EXPECT_NE(first, second);
    EXPECT_EQ(fs::path(first).parent_path(), fs::current_path());
    EXPECT_TRUE(fs::exists(first));
  }
  EXPECT_FALSE(fs::exists(first));
  EXPECT_FALSE(fs::exists(second));
}

TEST_F(FilePagerTest, UserPathIsUsedAndRemovedAfterwards) {
  const std::string path = (dir_ / "my.pages").string();
  {
    FilePagerOptions options;
    options.path = path;
    FilePager pager(options);
    EXPECT_EQ(pager.path(), path);
    EXPECT_TRUE(fs::exists(path));
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(FilePagerTest, PageInOfATensorNeverPagedOutIsAClearError) {
  FilePager pager(options_in_dir());
  std::vector<std::byte> into(64);
  expect_pager_error([&] { pager.start_page_in(42, into); }, {"tensor 42", "never paged out", pager.path()});
  const auto a = pattern(64, 1, 0);
  pager.start_page_out(1, a);
  std::vector<std::byte> wrong_size(65);
  expect_pager_error([&] { pager.start_page_in(1, wrong_size); }, {"tensor 1", "65 bytes", "has 64"});
  pager.wait_all();  // misuse stops nothing
}

TEST_F(FilePagerTest, UserPathInAMissingFolderFailsAtConstruction) {
  FilePagerOptions options;
  options.path = (dir_ / "no-such-folder" / "x.pages").string();
  try {
    FilePager pager(options);
    ADD_FAILURE() << "expected an IoError";
  } catch (const IoError& e) {
    const std::string message = e.what();
    for (const std::string& part :
         {options.path, std::string("does not exist"), std::string("choose another place for the page file")})
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

TEST_F(FilePagerTest, AnExistingFileIsNeverOverwritten) {
  const std::string path = (dir_ / "precious").string();
  { std::ofstream(path) << "keep me"; }
  FilePagerOptions options;
  options.path = path;
  EXPECT_THROW({ FilePager pager(options); }, IoError);
  EXPECT_EQ(size_on_disk(path), 7u);
}

}  // namespace
}  // namespace poet
