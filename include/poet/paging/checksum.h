// The checksum a paged tensor's stored copy (and a training checkpoint) carries, so that a
// page-in notices a file that was changed or corrupted underneath instead of computing
// with wrong values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace poet::paging {

// CRC-32 (the zlib / IEEE 802.3 polynomial) continued over `bytes`: start from 0. The same
// values as zlib's crc32, from Intel's ISA-L, which folds with carry-less multiplies where
// the CPU has them (zlib's own runs at about 2 GB/s here, slower than the storage).
std::uint32_t crc32_update(std::uint32_t crc, std::span<const std::byte> bytes);

// CRC-32 of `bytes`, any length.
inline std::uint32_t crc32_of(std::span<const std::byte> bytes) { return crc32_update(0, bytes); }

}  // namespace poet::paging
