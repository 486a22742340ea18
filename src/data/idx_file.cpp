#include "poet/data/idx_file.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

#include "poet/util/error.h"

namespace poet::data {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

std::string with_fix(std::string message, const std::string& fix) {
  if (!fix.empty()) message += "; " + fix;
  return message;
}

// Reads exactly `size` bytes or says how many there were.
std::size_t read_fully(gzFile f, void* into, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    // gzread takes an unsigned count: read in pieces well below its limit.
    const unsigned piece = static_cast<unsigned>(std::min<std::size_t>(size - done, 1u << 30));
    const int n = gzread(f, static_cast<char*>(into) + done, piece);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

}  // namespace

IdxArray read_idx_file(const std::string& path, const std::string& fix) {
  errno = 0;
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (!file)
    throw InputError(with_fix(
        fmt::format("cannot open IDX file '{}': {}", path, errno ? std::strerror(errno) : "out of memory"), fix));
  std::array<std::uint8_t, 4> magic{};
  if (read_fully(file.get(), magic.data(), magic.size()) != magic.size() || magic[0] != 0 || magic[1] != 0)
    throw InputError(
        with_fix(fmt::format("'{}' is not an IDX file (it does not start with two zero bytes)", path), fix));
  if (magic[2] != 0x08)
    throw InputError(
        with_fix(fmt::format("IDX file '{}' holds elements of type 0x{:02x}; only unsigned bytes (0x08) are read", path,
                             magic[2]),
                 fix));
  const int rank = magic[3];
  if (rank < 1 || rank > 4)
    throw InputError(with_fix(fmt::format("IDX file '{}' has {} dimensions; expected 1 to 4", path, rank), fix));
  IdxArray out;
  for (int d = 0; d < rank; ++d) {
    std::array<std::uint8_t, 4> b{};
    if (read_fully(file.get(), b.data(), b.size()) != b.size())
      throw InputError(with_fix(fmt::format("IDX file '{}' ends inside its header", path), fix));
    out.dims.push_back((std::int64_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3]);
  }
  // Each size is below 2^32, so the product of four is checked step by step against 2^34.
  constexpr std::int64_t kMaxValues = std::int64_t{1} << 34;  // no real IDX file comes near
  std::int64_t elements = 1;
  bool too_many = false;
  for (const std::int64_t n : out.dims) {
    if (n == 0)
      throw InputError(with_fix(
          fmt::format("IDX file '{}' has a corrupt header: its dimensions {} include 0", path, fmt::join(out.dims, "x")),
          fix));
    too_many = too_many || elements > kMaxValues / n;
    if (!too_many) elements *= n;
  }
  if (too_many) {
    // Name the largest dimension, the likely corrupt one, not the one at which the product
    // passed the limit (for 4294967295x28x28, an innocent 28).
    const auto largest = std::max_element(out.dims.begin(), out.dims.end()) - out.dims.begin();
    throw InputError(with_fix(
        fmt::format("IDX file '{}' has a corrupt header: its dimensions {} make more than 2^34 values, beyond any "
                    "dataset; the largest is dimension {} of {}{}, {}",
                    path, fmt::join(out.dims, "x"), largest + 1, out.dims.size(),
                    largest == 0 ? " (the item count)" : "", out.dims[static_cast<std::size_t>(largest)]),
        fix));
  }
  // Read in pieces, so that memory follows the data the file really holds, not its header's promise.
  constexpr std::size_t kPiece = std::size_t{1} << 24;
  std::size_t got = 0;
  while (got < static_cast<std::size_t>(elements)) {
    const std::size_t want = std::min(kPiece, static_cast<std::size_t>(elements) - got);
    out.values.resize(got + want);
    const std::size_t n = read_fully(file.get(), out.values.data() + got, want);
    got += n;
    if (n < want) break;
  }
  out.values.resize(got);
  if (got != static_cast<std::size_t>(elements)) {
    // In items (the first dimension) as well as values: a huge item count shows as such.
    const std::int64_t per_item = elements / out.dims.front();
    throw InputError(with_fix(
        fmt::format("IDX file '{}' is truncated: its header promises {} items (the first dimension) of {} values, {} "
                    "values in all; it holds {} values ({} whole items)",
                    path, out.dims.front(), per_item, elements, got, static_cast<std::int64_t>(got) / per_item),
        fix));
  }
  return out;
}

}  // namespace poet::data
