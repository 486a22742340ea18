#include "poet/util/input_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <utility>

#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {

std::string unreadable_path_text(const std::error_code& error) {
  if (error == std::errc::too_many_symbolic_link_levels)
    return "it is a loop of symbolic links (or too long a chain of them); check where they point";
  if (error == std::errc::filename_too_long)
    return "its name is too long for this system (a name in it longer than 255 bytes, or the whole path longer than "
           "4,096); check the path";
  if (error == std::errc::permission_denied)
    return "a folder on its way may not be searched (permission denied); check the folders' permissions";
  if (error == std::errc::not_a_directory) return "a part of it that should be a folder is a file; check the path";
  return "no such file; check the path";
}

std::string read_input_file(const std::string& path, std::string_view what, std::uintmax_t max_bytes,
                            const InputInspector& inspect) {
  namespace fs = std::filesystem;
  const auto refuse = [&](const std::string& why) {
    return InputError(fmt::format("cannot read {} '{}': {}", what, path, why));
  };
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw refuse(unreadable_path_text(ec));
  if (fs::is_directory(status)) throw refuse("it is a folder; give the path of a file");
  // Pipes and devices (e.g. /dev/stdin) have no size to check up front; the read below is bounded.
  const bool regular = fs::is_regular_file(status);
  if (regular) {
    const std::uintmax_t size = fs::file_size(path, ec);
    if (!ec && size > max_bytes)
      throw refuse(fmt::format("it holds {}, more than the {} poet reads; is this the right file?",
                               format_bytes(static_cast<double>(size)), format_bytes(static_cast<double>(max_bytes))));
  }
  errno = 0;
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw refuse(errno != 0 ? std::strerror(errno) : "it cannot be opened");
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    if (inspect) inspect(std::string_view(buffer, n));
    text.append(buffer, n);
    if (text.size() > max_bytes)
      throw refuse(fmt::format("it holds more than the {} poet reads; is this the right file?",
                               format_bytes(static_cast<double>(max_bytes))));
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get())) throw refuse(errno != 0 ? std::strerror(errno) : "a read failed");
  return text;
}

InputInspector first_piece_inspector(std::function<void(std::string_view first_piece)> check) {
  return [check = std::move(check), seen = false](std::string_view piece) mutable {
    if (!std::exchange(seen, true)) check(piece);
  };
}

std::optional<std::string> utf16_problem(std::string_view first_bytes) {
  const bool utf16 = first_bytes.starts_with("\xff\xfe") || first_bytes.starts_with("\xfe\xff") ||
                     (first_bytes.size() >= 2 && (first_bytes[0] == '\0') != (first_bytes[1] == '\0'));
  if (!utf16) return std::nullopt;
  return "encoded as UTF-16 (as Windows' \"Unicode\" and PowerShell's > save text); save it as UTF-8";
}

InputInspector text_inspector(std::string_view what, const std::string& path) {
  return [what = std::string(what), path, offset = std::size_t{0}](std::string_view piece) mutable {
    if (offset == 0)
      if (const auto problem = utf16_problem(piece))
        throw InputError(fmt::format("{} '{}' is {}", what, path, *problem));
    if (const auto nul = piece.find('\0'); nul != std::string_view::npos)
      throw InputError(fmt::format("{} '{}' holds a NUL byte (at byte {}): it is a binary file or device, not text; "
                                   "give the text file poet wrote",
                                   what, path, offset + nul));
    offset += piece.size();
  };
}

}  // namespace poet
