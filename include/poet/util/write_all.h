// Writing a whole buffer to a file descriptor (a pipe from a child process, typically),
// retrying short writes.
#pragma once

#include <cstddef>

namespace poet {

// False if the descriptor refuses (closed pipe, error) before everything is written.
bool write_all(int fd, const void* data, std::size_t size);

}  // namespace poet
