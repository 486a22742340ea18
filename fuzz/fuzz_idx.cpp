// An IDX file of the MNIST family (the Fashion-MNIST images and labels), gzip-compressed or
// not, read through the path as `poet train --data-dir` reads it.
#include "fuzz_support.h"
#include "poet/data/idx_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return poet::fuzz::expect_value_or_input_error(
      [&] { poet::data::read_idx_file(poet::fuzz::scratch_file_with({data, size})); });
}
