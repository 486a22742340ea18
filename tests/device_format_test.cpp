#include "poet/plan/device_format.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "hand_graph.h"
#include "poet/backward/backward.h"
#include "poet/cost/device.h"
#include "poet/schedule/checkpoint_all.h"
#include "poet/simulate/simulator.h"
#include "poet/util/atomic_file.h"
#include "random_graphs.h"

namespace poet {
namespace {

DevicePlan device_plan_for(const Graph& g, const Schedule& s) {
  const Plan plan = plan_from_schedule(s, g);
  const auto r = simulate(g, estimate_costs(g, builtin_platform("a72")), plan);
  return make_device_plan(plan, r.buffers, plan_memory_greedy(r.buffers), g.size());
}

std::string rejection(const std::vector<std::uint8_t>& bytes) {
  try {
    decode_device_plan(bytes, "p.bin");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

// Replaces the last four bytes with the CRC-32 of the rest, as a careful forger would.
std::vector<std::uint8_t> resealed(std::vector<std::uint8_t> body_and_crc) {
  body_and_crc.resize(body_and_crc.size() - 4);
  const auto crc = static_cast<std::uint32_t>(::crc32(0L, body_and_crc.data(), static_cast<uInt>(body_and_crc.size())));
  for (int i = 0; i < 4; ++i) body_and_crc.push_back(static_cast<std::uint8_t>(crc >> (8 * i)));
  return body_and_crc;
}

TEST(DeviceFormat, HandPlanByteByByte) {
  const Graph g = testing::hand_graph();
  const Plan plan = plan_from_schedule(checkpoint_all_schedule(g), g);
  const auto r = simulate(g, estimate_costs(g, testing::hand_device()), plan);
  const MemoryPlan memory = plan_memory_greedy(r.buffers);
  const std::vector<std::uint8_t> bytes = encode_device_plan(plan, r.buffers, memory, g.size());
  // Peak at d_relu: x, relu, d_relu (40 B, aligned to 48) and loss (20 B, aligned to 32).
  ASSERT_EQ(memory.arena_bytes, 48 + 48 + 48 + 32);
  ASSERT_EQ(plan.instructions.size(), 10u);
  // Magic, version 1, flags 0; 5 nodes, 10 instructions, alignment 16, arena 176 (two
  // bytes: 0xb0 0x01).
  const std::vector<std::uint8_t> header{'P', 'O', 'E', 'T', 1, 0, 5, 10, 16, 0xb0, 0x01};
  EXPECT_TRUE(std::equal(header.begin(), header.end(), bytes.begin()));
  // Each instruction is one byte ((node << 2) | kind), then one offset byte for each of
  // the 5 computes, then the CRC-32.
  ASSERT_EQ(bytes.size(), header.size() + 10 + 5 + 4);
  for (std::size_t k = 0; k < 10; ++k) {
    const Instruction& ins = plan.instructions[k];
    EXPECT_EQ(bytes[header.size() + k], (ins.node << 2) | static_cast<int>(ins.kind)) << k;
  }
  const auto crc = static_cast<std::uint32_t>(::crc32(0L, bytes.data(), static_cast<uInt>(bytes.size() - 4)));
  EXPECT_EQ(bytes[bytes.size() - 4], crc & 0xff);
  EXPECT_EQ(bytes[bytes.size() - 1], crc >> 24);

  const DevicePlan d = decode_device_plan(bytes, "hand");
  EXPECT_EQ(d.plan, plan);
  EXPECT_EQ(d.node_count, g.size());
  EXPECT_EQ(d.arena_bytes, memory.arena_bytes);
  EXPECT_EQ(d.alignment, 16);
  ASSERT_EQ(d.offsets.size(), 5u);
  for (std::size_t b = 0; b < r.buffers.size(); ++b)  // checkpoint-all: buffer b = compute b
    EXPECT_EQ(d.offsets[b], memory.offsets[b]) << b;
}

TEST(DeviceFormat, RoundTripsZooPlans) {
  std::mt19937 rng(3);
  for (const char* model : {"lenet5", "resnet18_cifar", "mobilenet_v2", "bert"}) {
    for (const auto mode : {BackwardMode::Autodiff, BackwardMode::Chain}) {
      const Graph g = build_model_training_graph(model, {.batch_size = 1}, mode);
      for (const bool paging : {false, true}) {
        const DevicePlan z =
            device_plan_for(g, paging ? testing::random_paging_schedule(rng, g, 0.3) : checkpoint_all_schedule(g));
        const auto bytes = encode_device_plan(z);
        EXPECT_EQ(decode_device_plan(bytes, model), z) << model;
        std::cout << model << " " << backward_mode_name(mode) << (paging ? " random paging" : " checkpoint_all")
                  << ": " << g.size() << " nodes, " << z.plan.instructions.size() << " instructions, "
                  << z.offsets.size() << " offsets, " << bytes.size() << " bytes\n";
      }
    }
  }
}

TEST(DeviceFormat, EveryTruncationAndEveryBitFlipIsRejected) {
  const Graph g = build_model_training_graph("lenet5", {.batch_size = 1}, BackwardMode::Autodiff);
  std::mt19937 rng(11);
  const auto bytes = encode_device_plan(device_plan_for(g, testing::random_paging_schedule(rng, g, 0.5)));
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
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_NE(rejection(longer), "accepted");
}

TEST(DeviceFormat, MessagesSayWhatIsWrong) {
  const Graph g = testing::hand_graph();
  const auto bytes = encode_device_plan(device_plan_for(g, checkpoint_all_schedule(g)));
  EXPECT_EQ(rejection({'G', 'I', 'F', '8', 1, 0}),
            "device plan 'p.bin': not a poet device plan (it does not start with \"POET\")");
  EXPECT_EQ(rejection({}), "device plan 'p.bin': truncated at byte 0: expected the magic \"POET\"");
  EXPECT_EQ(rejection({'P', 'O'}), "device plan 'p.bin': truncated at byte 2: expected the magic \"POET\"");
  EXPECT_EQ(rejection({'P', 'O', 'E', 'T', 1}), "device plan 'p.bin': truncated at byte 5: expected the flags");
  auto newer = bytes;
  newer[4] = 7;
  EXPECT_EQ(rejection(newer), "device plan 'p.bin': version 7; this poet reads version 1");
  auto flagged = bytes;
  flagged[5] = 1;
  EXPECT_EQ(rejection(flagged), "device plan 'p.bin': unknown flags; this poet knows none");

  auto corrupt = bytes;
  corrupt[12] ^= 0x20;
  const auto stored = static_cast<std::uint32_t>(bytes[bytes.size() - 4]) | bytes[bytes.size() - 3] << 8 |
                      bytes[bytes.size() - 2] << 16 | static_cast<std::uint32_t>(bytes[bytes.size() - 1]) << 24;
  const std::string message = rejection(corrupt);
  EXPECT_NE(message.find(fmt::format("checksum mismatch: stored 0x{:08x}, computed 0x", stored)), std::string::npos)
      << message;
  EXPECT_NE(message.find("the file is corrupted or truncated"), std::string::npos) << message;
  auto cut = bytes;
  cut.pop_back();
  EXPECT_NE(rejection(cut).find("checksum mismatch"), std::string::npos);

  // Files with a valid checksum but a bad body (a buggy or hostile writer).
  auto node_out = bytes;
  node_out[6] = 3;  // node count 3: instruction 3 (compute of node 3) is out of range
  EXPECT_EQ(rejection(resealed(node_out)), "device plan 'p.bin': instruction 3 names node 3; the graph has 3");
  auto trailing = bytes;
  trailing.insert(trailing.end() - 4, {0x00, 0x00});
  EXPECT_EQ(rejection(resealed(trailing)), "device plan 'p.bin': 2 unexpected bytes after the offsets");
  auto short_body = bytes;
  short_body.erase(short_body.end() - 5);  // drop the last offset
  EXPECT_EQ(rejection(resealed(short_body)), "device plan 'p.bin': truncated at byte 25: expected an arena offset");
  auto outside = bytes;
  outside[outside.size() - 5] = 11;  // the last offset: 11 x 16 = 176, the arena's end
  EXPECT_EQ(rejection(resealed(outside)),
            "device plan 'p.bin': buffer 4 (compute of node 4) has offset 11 x 16 B, outside the arena of 176 B");
  auto huge_count = bytes;
  huge_count[7] = 0x7f;  // 127 instructions in 26 bytes
  EXPECT_EQ(rejection(resealed(huge_count)), "device plan 'p.bin': claims 127 instructions in 26 bytes");
  // The firmware refuses an alignment that leaves floats unaligned; so does every reader.
  auto unaligned = bytes;
  unaligned[8] = 6;
  EXPECT_EQ(rejection(resealed(unaligned)),
            "device plan 'p.bin': alignment 6 is not a multiple of 4, so float tensors would sit at unaligned "
            "offsets; make the plan again with poet plan");
}

TEST(DeviceFormat, CHeaderHoldsTheBytes) {
  const Graph g = testing::hand_graph();
  const auto bytes = encode_device_plan(device_plan_for(g, checkpoint_all_schedule(g)));
  ASSERT_EQ(bytes.size(), 30u);
  const std::string h = device_plan_c_header(bytes, "poet_plan");
  EXPECT_EQ(h.rfind("// poet device plan, format version 1 (30 bytes)", 0), 0u) << h;
  // Guarded: a second #include of it in one file is harmless.
  EXPECT_NE(h.find("\n#ifndef POET_DEVICE_PLAN_POET_PLAN_H\n#define POET_DEVICE_PLAN_POET_PLAN_H\n#include <stdint.h>\n"),
            std::string::npos);
  EXPECT_TRUE(h.ends_with("\n#endif  // POET_DEVICE_PLAN_POET_PLAN_H\n")) << h;
  EXPECT_NE(h.find("const uint8_t poet_plan[] = {\n    0x50, 0x4f, 0x45, 0x54, 0x01, 0x00, 0x05, 0x0a, 0x10, 0xb0, "
                   "0x01,"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("\n};\nconst unsigned int poet_plan_len = 30;\n"), std::string::npos) << h;
  // Every byte appears once, in order.
  std::size_t at = h.find('{'), count = 0;
  for (const std::uint8_t b : bytes) {
    at = h.find(fmt::format("0x{:02x}", b), at);
    ASSERT_NE(at, std::string::npos) << count;
    at += 4;
    ++count;
  }
  EXPECT_EQ(count, 30u);
}

TEST(DeviceFormat, CHeaderIsReadAsACompilerReadsIt) {
  const Graph g = testing::hand_graph();
  const auto bytes = encode_device_plan(device_plan_for(g, checkpoint_all_schedule(g)));
  const std::string h = device_plan_c_header(bytes, "poet_plan");
  EXPECT_EQ(bytes_of_c_header(h, "p.h"), bytes);
  const auto rejection = [](const std::string& text) {
    try {
      bytes_of_c_header(text, "p.h");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const auto edited = [&](std::string_view from, std::string_view to) {
    std::string t = h;
    const std::size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  const std::string tail = "; give the .bin or the header 'poet plan --c-header' wrote";
  // A C compiler refuses each of these, so check-plan must too.
  EXPECT_EQ(rejection(edited("0x50, 0x4f,", "0x50 0x4f,")),
            "device plan 'p.h': a comma is missing before byte 1 of the array" + tail);
  EXPECT_EQ(rejection(edited("0x50, 0x4f,", "0x500x4f,")),
            "device plan 'p.h': byte 0 of the array is not a hex byte like 0x4f" + tail);
  EXPECT_EQ(rejection(edited("0x50, 0x4f,", "0x50,, 0x4f,")),
            "device plan 'p.h': a comma without a byte before it, after byte 1 of the array" + tail);
  EXPECT_EQ(rejection(edited("poet_plan_len = 30;", "poet_plan_len = 31;")),
            "device plan 'p.h': its '_len' is '31', and the array holds 30 bytes" + tail);
  EXPECT_EQ(rejection(edited("poet_plan_len = 30;", "poet_plan_len;")),
            "device plan 'p.h': its '_len' is not set to a number" + tail);
  // What C allows and changes nothing: a trailing comma, other spacing, no length at all.
  EXPECT_EQ(bytes_of_c_header(edited("\n};", ",\n};"), "p.h"), bytes);
  EXPECT_EQ(bytes_of_c_header(edited("0x50, 0x4f,", "0x50 ,\t0x4f ,"), "p.h"), bytes);
  EXPECT_EQ(bytes_of_c_header(edited("const unsigned int poet_plan_len = 30;\n", ""), "p.h"), bytes);
}

TEST(DeviceFormat, FileRoundTrip) {
  const Graph g = testing::hand_graph();
  const DevicePlan d = device_plan_for(g, checkpoint_all_schedule(g));
  const std::string path = (std::filesystem::temp_directory_path() / "poet_device_format_test.bin").string();
  const std::vector<std::uint8_t> bytes = encode_device_plan(d);
  write_file_atomically(path, std::string(bytes.begin(), bytes.end()));
  EXPECT_EQ(load_device_plan(path), d);
  std::filesystem::remove(path);
  EXPECT_THROW(load_device_plan(path), InputError);
}

}  // namespace
}  // namespace poet
