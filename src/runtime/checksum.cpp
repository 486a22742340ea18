#include "poet/runtime/checksum.h"

#include <zlib.h>

namespace poet::paging {

std::uint32_t crc32_of(std::span<const std::byte> bytes) {
  // crc32_z takes a size_t length, so tensors over 4 GiB need no chunking.
  const uLong initial = crc32_z(0L, Z_NULL, 0);
  return static_cast<std::uint32_t>(
      crc32_z(initial, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

}  // namespace poet::paging
