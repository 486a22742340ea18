#include "poet/util/atomic_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "poet/util/error.h"

namespace poet {

void write_file_atomically(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr)
    throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  const bool written = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
  const int saved_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = written && closed ? errno : saved_errno;
    std::remove(tmp.c_str());
    throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
  }
}

}  // namespace poet
