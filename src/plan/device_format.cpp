#include "poet/plan/device_format.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <limits>

#include "poet/util/error.h"
#include "poet/util/input_file.h"
#include "poet/util/units.h"

namespace poet {
namespace {

constexpr std::uint8_t kMagic[4] = {'P', 'O', 'E', 'T'};

void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
  do {
    std::uint8_t byte = v & 0x7f;
    v >>= 7;
    out.push_back(static_cast<std::uint8_t>(byte | (v != 0 ? 0x80 : 0)));
  } while (v != 0);
}

std::uint32_t crc32_of(std::span<const std::uint8_t> bytes) {
  return static_cast<std::uint32_t>(::crc32(0L, bytes.data(), static_cast<uInt>(bytes.size())));
}

// Reads the encoding front to back; every read says what it expected if the bytes end.
class Reader {
 public:
  Reader(std::span<const std::uint8_t> bytes, std::string_view origin) : bytes_(bytes), origin_(origin) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("device plan '{}': {}", origin_, what));
  }

  std::uint8_t byte(const char* what) {
    if (pos_ >= bytes_.size()) fail(fmt::format("truncated at byte {}: expected {}", pos_, what));
    return bytes_[pos_++];
  }

  std::uint64_t varint(const char* what) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const std::size_t at = pos_;
      const std::uint8_t b = byte(what);
      if (shift == 63 && b > 1) fail(fmt::format("number at byte {} ({}) does not fit 64 bits", at, what));
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail(fmt::format("malformed number at byte {} ({})", pos_, what));
  }

  std::size_t position() const { return pos_; }

 private:
  std::span<const std::uint8_t> bytes_;
  std::string_view origin_;
  std::size_t pos_ = 0;
};

}  // namespace

DevicePlan make_device_plan(const Plan& plan, const std::vector<BufferLife>& buffers, const MemoryPlan& memory,
                            std::size_t node_count, std::int64_t alignment) {
  POET_CHECK(memory.offsets.size() == buffers.size(), "the memory plan belongs to these buffers");
  DevicePlan d{.node_count = node_count, .alignment = alignment, .arena_bytes = memory.arena_bytes, .plan = plan,
               .offsets = {}};
  // Buffers are in creation (event) order, which need not be plan order: index them by
  // the instruction that created each.
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> buffer_of(plan.instructions.size(), kNone);
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    POET_CHECK(buffers[b].created_by < plan.instructions.size() && buffer_of[buffers[b].created_by] == kNone,
               fmt::format("buffer {} names instruction {}, not one of this plan's", b, buffers[b].created_by));
    buffer_of[buffers[b].created_by] = b;
  }
  for (std::size_t p = 0; p < plan.instructions.size(); ++p) {
    const bool creates = creates_buffer(plan.instructions[p].kind);
    POET_CHECK(creates == (buffer_of[p] != kNone),
               fmt::format("instruction {} and the buffers of the simulation disagree", p));
    if (creates) d.offsets.push_back(memory.offsets[buffer_of[p]]);
  }
  return d;
}

std::vector<std::uint8_t> encode_device_plan(const DevicePlan& d) {
  std::vector<std::uint8_t> out(std::begin(kMagic), std::end(kMagic));
  out.push_back(kDevicePlanVersion);
  out.push_back(0);  // flags, none yet
  put_varint(out, d.node_count);
  put_varint(out, d.plan.instructions.size());
  put_varint(out, static_cast<std::uint64_t>(d.alignment));
  put_varint(out, static_cast<std::uint64_t>(d.arena_bytes));
  for (const auto& ins : d.plan.instructions)
    put_varint(out, (static_cast<std::uint64_t>(ins.node) << 2) | static_cast<std::uint64_t>(ins.kind));
  for (const auto offset : d.offsets) {
    POET_CHECK(offset % d.alignment == 0, "offsets are aligned");
    put_varint(out, static_cast<std::uint64_t>(offset / d.alignment));
  }
  const std::uint32_t crc = crc32_of(out);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(crc >> (8 * i)));
  return out;
}

std::vector<std::uint8_t> encode_device_plan(const Plan& plan, const std::vector<BufferLife>& buffers,
                                             const MemoryPlan& memory, std::size_t node_count, std::int64_t alignment) {
  return encode_device_plan(make_device_plan(plan, buffers, memory, node_count, alignment));
}

DevicePlan decode_device_plan(std::span<const std::uint8_t> bytes, std::string_view origin) {
  Reader r(bytes, origin);
  for (const auto m : kMagic)
    if (r.byte("the magic \"POET\"") != m) r.fail("not a poet device plan (it does not start with \"POET\")");
  const std::uint8_t version = r.byte("the format version");
  if (version != kDevicePlanVersion)
    r.fail(fmt::format("version {}; this poet reads version {}", version, kDevicePlanVersion));
  if (r.byte("the flags") != 0) r.fail("unknown flags; this poet knows none");
  // Check the checksum before trusting any count read from the body.
  if (bytes.size() < 4 + r.position())
    r.fail(fmt::format("truncated at byte {}: expected the header and a CRC-32", bytes.size()));
  const auto body = bytes.first(bytes.size() - 4);
  const std::uint32_t stored = static_cast<std::uint32_t>(bytes[bytes.size() - 4]) |
                               static_cast<std::uint32_t>(bytes[bytes.size() - 3]) << 8 |
                               static_cast<std::uint32_t>(bytes[bytes.size() - 2]) << 16 |
                               static_cast<std::uint32_t>(bytes[bytes.size() - 1]) << 24;
  if (const std::uint32_t computed = crc32_of(body); computed != stored)
    r.fail(fmt::format("checksum mismatch: stored 0x{:08x}, computed 0x{:08x}; the file is corrupted or truncated",
                       stored, computed));
  Reader b(body, origin);
  for (int i = 0; i < 6; ++i) b.byte("the header");
  DevicePlan d;
  d.node_count = b.varint("the node count");
  const std::uint64_t count = b.varint("the instruction count");
  d.alignment = static_cast<std::int64_t>(b.varint("the alignment"));
  d.arena_bytes = static_cast<std::int64_t>(b.varint("the arena size"));
  if (d.node_count > static_cast<std::uint64_t>(std::numeric_limits<NodeId>::max()))
    b.fail(fmt::format("node count {} is more than a node id holds", d.node_count));
  if (d.alignment <= 0) b.fail("alignment 0 or 2^63 or more; it must be a positive byte count");
  // Float tensors sit at offsets that are multiples of it: the firmware (a Cortex-M's float
  // loads) needs 4-byte aligned ones.
  if (d.alignment % 4 != 0)
    b.fail(fmt::format("alignment {} is not a multiple of 4, so float tensors would sit at unaligned offsets; make "
                       "the plan again with poet plan",
                       d.alignment));
  if (d.arena_bytes < 0) b.fail("arena size 2^63 bytes or more");
  if (count > body.size()) b.fail(fmt::format("claims {} instructions in {} bytes", count, body.size()));
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t v = b.varint("an instruction");
    const std::uint64_t node = v >> 2;
    if (node >= d.node_count)
      b.fail(fmt::format("instruction {} names node {}; the graph has {}", i, node, d.node_count));
    d.plan.instructions.push_back({static_cast<InstrKind>(v & 3), static_cast<NodeId>(node)});
  }
  for (const auto& ins : d.plan.instructions) {
    if (!creates_buffer(ins.kind)) continue;
    const std::uint64_t units = b.varint("an arena offset");
    // A buffer starts inside the arena (a zero-byte one may sit at 0 of an empty arena).
    if (units > static_cast<std::uint64_t>(d.arena_bytes / d.alignment) ||
        (static_cast<std::int64_t>(units) * d.alignment >= d.arena_bytes && units != 0))
      b.fail(fmt::format("buffer {} ({} of node {}) has offset {} x {} B, outside the arena of {}", d.offsets.size(),
                         instr_name(ins.kind), ins.node, units, d.alignment, format_bytes_exact(d.arena_bytes)));
    d.offsets.push_back(static_cast<std::int64_t>(units) * d.alignment);
  }
  if (b.position() != body.size())
    b.fail(fmt::format("{} unexpected bytes after the offsets", body.size() - b.position()));
  return d;
}

std::vector<std::uint8_t> bytes_of_c_header(std::string_view text, std::string_view origin) {
  const auto fail = [&](const std::string& what) -> std::vector<std::uint8_t> {
    throw InputError(fmt::format("device plan '{}': {}; give the .bin or the header 'poet plan --c-header' wrote",
                                 origin, what));
  };
  const std::size_t open = text.find('{'), close = text.find('}', open == std::string_view::npos ? 0 : open);
  if (open == std::string_view::npos || close == std::string_view::npos)
    return fail("a C header without a '{ ... }' array of bytes");
  const auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  // Read as a C compiler reads the initializer: bytes separated by commas, one trailing comma
  // allowed. A missing comma must fail here too, or check-plan passes a header the firmware's
  // build refuses.
  std::vector<std::uint8_t> bytes;
  bool separated = true;
  for (std::size_t i = open + 1; i < close;) {
    const char c = text[i];
    if (is_space(c)) {
      ++i;
    } else if (c == ',') {
      if (separated)
        return fail(fmt::format("a comma without a byte before it, after byte {} of the array", bytes.size()));
      separated = true;
      ++i;
    } else if (text.substr(i, 2) != "0x" || i + 4 > close || !std::isxdigit(static_cast<unsigned char>(text[i + 2])) ||
               !std::isxdigit(static_cast<unsigned char>(text[i + 3])) ||
               (i + 4 < close && text[i + 4] != ',' && !is_space(text[i + 4]))) {
      return fail(fmt::format("byte {} of the array is not a hex byte like 0x4f", bytes.size()));
    } else if (!separated) {
      return fail(fmt::format("a comma is missing before byte {} of the array", bytes.size()));
    } else {
      bytes.push_back(static_cast<std::uint8_t>(std::stoi(std::string(text.substr(i + 2, 2)), nullptr, 16)));
      separated = false;
      i += 4;
    }
  }
  // The length firmware is given must be the array's.
  const std::size_t len_at = text.find("_len", close);
  if (len_at != std::string_view::npos) {
    std::size_t i = text.find('=', len_at);
    const std::size_t end = text.find(';', len_at);
    if (i == std::string_view::npos || end == std::string_view::npos || i > end)
      return fail("its '_len' is not set to a number");
    std::string_view value = text.substr(i + 1, end - i - 1);
    while (!value.empty() && is_space(value.front())) value.remove_prefix(1);
    while (!value.empty() && is_space(value.back())) value.remove_suffix(1);
    if (value != std::to_string(bytes.size()))
      return fail(fmt::format("its '_len' is '{}', and the array holds {} bytes", value, bytes.size()));
  }
  return bytes;
}

DevicePlan load_device_plan(const std::string& path) {
  // The binary begins with the magic; anything else is read as the C header, whose text holds
  // no NUL byte. A stream of neither (/dev/zero) is refused at its first bytes.
  bool binary = false;
  const auto begins_a_plan = [&](std::string_view piece) {
    binary = piece.size() >= 4 && std::equal(std::begin(kMagic), std::end(kMagic), piece.begin());
    if (!binary && piece.find('\0') != std::string_view::npos)
      throw InputError(fmt::format("device plan '{}': not a poet device plan (it begins neither with \"POET\", as "
                                   "--device-plan's .bin does, nor with text, as --c-header's .h does)",
                                   path));
  };
  const std::string text =
      read_input_file(path, "device plan", kMaxInputFileBytes, first_piece_inspector(begins_a_plan));
  const std::vector<std::uint8_t> bytes(text.begin(), text.end());
  if (!binary && text.find("const uint8_t") != std::string::npos) return decode_device_plan(bytes_of_c_header(text, path), path);
  return decode_device_plan(bytes, path);
}

std::string device_plan_c_header(std::span<const std::uint8_t> bytes, std::string_view symbol) {
  // Guarded, so that a second #include in one file is harmless; the array is defined here
  // (include it in one .c file, as xxd -i's output), not static, so one copy is linked.
  std::string guard = fmt::format("POET_DEVICE_PLAN_{}_H", symbol);
  std::transform(guard.begin(), guard.end(), guard.begin(), [](unsigned char c) { return std::toupper(c); });
  std::string out = fmt::format(
      "// poet device plan, format version {} ({} bytes); see docs/DEVICE_FORMAT.md.\n"
      "#ifndef {}\n#define {}\n#include <stdint.h>\n\nconst uint8_t {}[] = {{",
      kDevicePlanVersion, bytes.size(), guard, guard, symbol);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    out += fmt::format("{}0x{:02x}{}", i % 12 == 0 ? "\n    " : " ", bytes[i], i + 1 < bytes.size() ? "," : "");
  out += fmt::format("\n}};\nconst unsigned int {}_len = {};\n#endif  // {}\n", symbol, bytes.size(), guard);
  return out;
}

}  // namespace poet
