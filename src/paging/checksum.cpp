#include "poet/paging/checksum.h"

#include <isa-l/crc.h>

namespace poet::paging {

std::uint32_t crc32_update(std::uint32_t crc, std::span<const std::byte> bytes) {
  // crc32_gzip_refl is zlib's crc32 (the same pre- and post-inversion, so chaining works
  // the same); its 64-bit length needs no chunking.
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

}  // namespace poet::paging
