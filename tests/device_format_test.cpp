#include "poet/plan/device_format.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "hand_graph.h"
#include "poet/backward/backward.h"
#include "poet/baselines/checkpoint_all.h"
#include "random_graphs.h"

namespace poet {
namespace {

DevicePlan device_plan_for(const Graph& g, const Schedule& s) {
  const Plan plan = plan_from_schedule(s, g);
  const auto r = simulate(g, estimate_costs(g, builtin_platform("a72")), plan);
  return make_device_plan(plan, r.buffers, plan_memory_greedy(r.buffers), g.size());
}

TEST(DeviceFormat, RoundTripsHandAndZooPlans) {
  const Graph hand = testing::hand_graph();
  const DevicePlan d = device_plan_for(hand, checkpoint_all_schedule(hand));
  EXPECT_EQ(decode_device_plan(encode_device_plan(d), "test"), d);
  std::mt19937 rng(3);
  for (const char* model : {"lenet5", "resnet18_cifar", "bert"}) {
    const Graph g = build_model_training_graph(model, {}, BackwardMode::Autodiff);
    const DevicePlan z = device_plan_for(g, testing::random_paging_schedule(rng, g, 0.3));
    const auto bytes = encode_device_plan(z);
    EXPECT_EQ(decode_device_plan(bytes, model), z);
    std::cout << model << ": " << z.plan.instructions.size() << " instructions, " << bytes.size()
              << " bytes encoded\n";
  }
}

TEST(DeviceFormat, HandPlanIsAFewDozenBytes) {
  const Graph g = testing::hand_graph();
  const DevicePlan d = device_plan_for(g, checkpoint_all_schedule(g));
  // Peak at d_relu: x, relu, d_relu (40 B, aligned to 48) and loss (20 B, aligned to 32).
  EXPECT_EQ(d.arena_bytes, 48 + 48 + 48 + 32);
  // Magic, version, flags; node count, instruction count, alignment (1 byte each) and
  // arena size 176 (2 bytes); 10 one-byte instructions; 5 one-byte offsets; CRC-32.
  EXPECT_EQ(encode_device_plan(d).size(), 6u + 3u + 2u + 10u + 5u + 4u);
}

std::string rejection(const std::vector<std::uint8_t>& bytes) {
  try {
    decode_device_plan(bytes, "p.bin");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(DeviceFormat, EveryTruncationAndEveryBitFlipIsRejected) {
  const Graph g = build_model_training_graph("lenet5", {}, BackwardMode::Autodiff);
  const auto bytes = encode_device_plan(device_plan_for(g, checkpoint_all_schedule(g)));
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(rejection(cut), "accepted") << "truncated to " << n;
  }
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      auto flipped = bytes;
      flipped[i] ^= static_cast<std::uint8_t>(1 << bit);
      ASSERT_NE(rejection(flipped), "accepted") << "byte " << i << " bit " << bit;
    }
}

TEST(DeviceFormat, MessagesSayWhatIsWrong) {
  const Graph g = testing::hand_graph();
  auto bytes = encode_device_plan(device_plan_for(g, checkpoint_all_schedule(g)));
  EXPECT_EQ(rejection({'G', 'I', 'F', '8'}), "device plan 'p.bin': not a poet device plan (it does not start with \"POET\")");
  EXPECT_EQ(rejection({'P', 'O'}), "device plan 'p.bin': truncated at byte 2: expected the magic \"POET\"");
  auto newer = bytes;
  newer[4] = 7;
  EXPECT_EQ(rejection(newer), "device plan 'p.bin': version 7; this poet reads version 1");
  auto corrupt = bytes;
  corrupt[10] ^= 0x20;
  EXPECT_NE(rejection(corrupt).find("checksum mismatch"), std::string::npos);
  bytes.pop_back();
  EXPECT_NE(rejection(bytes).find("checksum mismatch"), std::string::npos);
}

TEST(DeviceFormat, CHeaderHoldsTheBytes) {
  const std::vector<std::uint8_t> bytes{'P', 'O', 'E', 'T', 1, 0};
  const std::string h = device_plan_c_header(bytes, "poet_plan");
  EXPECT_NE(h.find("#include <stdint.h>"), std::string::npos);
  EXPECT_NE(h.find("const uint8_t poet_plan[] = {\n    0x50, 0x4f, 0x45, 0x54, 0x01, 0x00\n};"), std::string::npos) << h;
  EXPECT_NE(h.find("const unsigned int poet_plan_len = 6;"), std::string::npos);
}

TEST(DeviceFormat, FileRoundTrip) {
  const Graph g = testing::hand_graph();
  const DevicePlan d = device_plan_for(g, checkpoint_all_schedule(g));
  const std::string path = (std::filesystem::temp_directory_path() / "poet_test_plan.bin").string();
  save_device_plan(encode_device_plan(d), path);
  EXPECT_EQ(load_device_plan(path), d);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace poet
