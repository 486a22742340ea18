// The checksum a paged tensor's stored copy carries, so that a page-in notices a file that
// was changed or corrupted underneath instead of computing with wrong values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace poet::paging {

// CRC-32 (the zlib / IEEE 802.3 polynomial) of `bytes`, any length.
std::uint32_t crc32_of(std::span<const std::byte> bytes);

}  // namespace poet::paging
