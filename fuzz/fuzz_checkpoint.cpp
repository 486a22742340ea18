// A training checkpoint (`poet train --resume --checkpoint FILE`): decoded as it is, and
// again with its CRC-32 recomputed, so that mutations also reach the fields behind the
// checksum.
#include "fuzz_support.h"
#include "poet/train/checkpoint_file.h"

namespace {

std::string as_string(std::span<const std::uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  poet::fuzz::expect_value_or_input_error(
      [&] { poet::train::decode_checkpoint(as_string({data, size}), "fuzz.ckpt"); });
  const auto forged = poet::fuzz::with_crc_trailer_fixed({data, size});
  return poet::fuzz::expect_value_or_input_error(
      [&] { poet::train::decode_checkpoint(as_string(forged), "fuzz.ckpt"); });
}
