// Reading the files a user hands poet, with errors a user can act on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace poet {

// No input poet reads (graphs, schedules, profiles, plans, checkpoints) comes near this;
// a larger file is refused before it is read, so a wrong path cannot exhaust memory.
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{1} << 30;  // 1 GiB

// The whole file at `path`. Throws InputError naming `what` ("graph", "plan", ...) and the
// path when the file is missing, a folder or another non-regular file, unreadable, or
// larger than `max_bytes`.
std::string read_input_file(const std::string& path, std::string_view what,
                            std::uintmax_t max_bytes = kMaxInputFileBytes);

}  // namespace poet
