// Reading the files a user hands poet, with errors a user can act on.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace poet {

// No input poet reads (graphs, schedules, profiles, plans, checkpoints) comes near this;
// a larger file is refused before it is read, so a wrong path cannot exhaust memory.
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{1} << 30;  // 1 GiB

// Sees each piece of a file as it is read, and throws InputError to stop reading when the
// bytes so far cannot be of the file's kind. A stream (a pipe, /dev/zero) has no size to
// check up front: this refuses the wrong one at its first bytes, not after max_bytes of it.
// The first piece is the file's first 64 KiB, or all of it if shorter.
using InputInspector = std::function<void(std::string_view piece)>;

// Why a path whose status could not be read (`error` from std::filesystem::status, or none
// when it does not exist) names no file, and the fix: "no such file; check the path", "it is a
// loop of symbolic links; ...", "its name is too long ...".
std::string unreadable_path_text(const std::error_code& error);

// Text saved as UTF-16 (Windows' "Unicode", PowerShell's `>` redirection) begins with its
// byte-order mark, or has a NUL in every other byte of ASCII: for an error message,
// "encoded as UTF-16 ...; save it as UTF-8", not that a NUL makes it a binary file.
std::optional<std::string> utf16_problem(std::string_view first_bytes);

// The whole file at `path`. Throws InputError naming `what` ("graph", "plan", ...) and the
// path when the file is missing, a folder, unreadable, or larger than `max_bytes`, and
// whatever `inspect` throws.
std::string read_input_file(const std::string& path, std::string_view what,
                            std::uintmax_t max_bytes = kMaxInputFileBytes, const InputInspector& inspect = {});

// An inspector for formats known by their first bytes (checkpoints, ONNX, device plans):
// `check` sees the first piece only, and throws InputError if it cannot begin such a file.
InputInspector first_piece_inspector(std::function<void(std::string_view first_piece)> check);

// An inspector for text formats (plans, solutions): refuses a NUL byte, which no text holds.
InputInspector text_inspector(std::string_view what, const std::string& path);

}  // namespace poet
