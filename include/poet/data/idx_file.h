// The IDX format of the MNIST family (LeCun et al.): a big-endian header - two zero bytes,
// a type code, the number of dimensions - then each dimension as a 32-bit big-endian
// count, then the elements. Only unsigned bytes (type 0x08) are read, which is what the
// image and label files of MNIST and Fashion-MNIST hold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace poet::data {

struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> values;  // row-major, product(dims) of them
};

// Reads `path`, gzip-compressed or not (zlib tells them apart). Throws InputError naming
// the file and what is wrong with it: missing, not IDX, an element type other than bytes,
// or shorter than its header says. `fix` is appended to each message (how to get a good
// copy of the file).
IdxArray read_idx_file(const std::string& path, const std::string& fix = "");

}  // namespace poet::data
