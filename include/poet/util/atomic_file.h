// Writing output files so that a reader never sees a half-written one.
#pragma once

#include <string>
#include <string_view>

namespace poet {

// Writes `contents` to `path` through a temporary file in the same folder and a rename.
// On failure the destination is untouched, the temporary removed, and IoError names the
// path and the system's reason (a missing folder, no permission, a full disk).
void write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace poet
