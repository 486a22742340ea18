#include "poet/util/quoting.h"

#include <fmt/format.h>

namespace poet {
namespace {

bool is_control(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

}  // namespace

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (!is_control(c)) {
      out += c;
      continue;
    }
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    }
  }
  return out;
}

std::string c_comment_text(std::string_view text) {
  std::string out;
  for (const char c : one_line(text)) {
    if (c == '/' && !out.empty() && out.back() == '*') out += '\\';
    out += c;
  }
  return out;
}

std::string c_string_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '"' || c == '\\' || c == '?')
      (out += '\\') += c;
    else if (is_control(c))
      out += fmt::format("\\{:03o}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  return out;
}

}  // namespace poet
