// A device plan (.bin, docs/DEVICE_FORMAT.md): decoded as it is, and again with its CRC-32
// recomputed, so that mutations also reach the body behind the checksum (what a buggy or
// hostile writer could produce).
#include "fuzz_support.h"
#include "poet/plan/device_format.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  poet::fuzz::expect_value_or_input_error([&] { poet::decode_device_plan({data, size}, "fuzz.bin"); });
  const auto forged = poet::fuzz::with_crc_trailer_fixed({data, size});
  return poet::fuzz::expect_value_or_input_error([&] { poet::decode_device_plan(forged, "fuzz.bin"); });
}
