// The device plan: a compact, versioned, checksummed binary encoding of an execution plan
// and its arena offsets, for firmware (docs/DEVICE_FORMAT.md gives the layout byte by byte).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "poet/plan/memory_plan.h"
#include "poet/plan/plan.h"

namespace poet {

inline constexpr std::uint8_t kDevicePlanVersion = 1;

struct DevicePlan {
  std::size_t node_count = 0;
  std::int64_t alignment = 16;
  std::int64_t arena_bytes = 0;
  Plan plan;
  // One arena offset per instruction that creates a buffer (compute, page-in), in plan order.
  std::vector<std::int64_t> offsets;
  bool operator==(const DevicePlan&) const = default;
};

// `buffers` and `memory` come from simulating `plan` (their buffers are in creation order).
DevicePlan make_device_plan(const Plan& plan, const std::vector<BufferLife>& buffers, const MemoryPlan& memory,
                            std::size_t node_count, std::int64_t alignment = 16);

// The bytes of docs/DEVICE_FORMAT.md: a few bytes of header, about one byte per
// instruction up to node 31 and two up to node 4,095, one or two per offset, a CRC-32.
std::vector<std::uint8_t> encode_device_plan(const DevicePlan& plan);
// make_device_plan and encode_device_plan in one.
std::vector<std::uint8_t> encode_device_plan(const Plan& plan, const std::vector<BufferLife>& buffers,
                                             const MemoryPlan& memory, std::size_t node_count,
                                             std::int64_t alignment = 16);
// Throws InputError naming `origin` and what is wrong: not a device plan, an unknown
// version, truncated, a checksum mismatch, a node out of range, trailing bytes.
DevicePlan decode_device_plan(std::span<const std::uint8_t> bytes, std::string_view origin);

// Reads a .bin, or the C header device_plan_c_header wrote (told apart by the magic).
DevicePlan load_device_plan(const std::string& path);
// The bytes of a C header's array (as device_plan_c_header writes it); InputError naming
// `origin` if it has none, a byte is not "0x" and two hex digits, a comma is missing or
// doubled, or the `<symbol>_len` after the array is not the array's length.
std::vector<std::uint8_t> bytes_of_c_header(std::string_view text, std::string_view origin);

// A C header for firmware: `const uint8_t <symbol>[] = {...}; const unsigned int <symbol>_len`.
std::string device_plan_c_header(std::span<const std::uint8_t> bytes, std::string_view symbol);

}  // namespace poet
