#include "poet/util/quoting.h"

#include <fmt/format.h>

namespace poet {
namespace {

bool is_control(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

// The length of the well-formed UTF-8 sequence `text` begins with (Unicode's table 3-7: no
// overlong form, no surrogate, nothing past U+10FFFF); 0 if it begins with none.
std::size_t sequence_length(std::string_view text) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = at(0);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) length = 3, low = lead == 0xe0 ? 0xa0 : 0x80, high = lead == 0xed ? 0x9f : 0xbf;
  else if (lead >= 0xf0 && lead <= 0xf4) length = 4, low = lead == 0xf0 ? 0x90 : 0x80, high = lead == 0xf4 ? 0x8f : 0xbf;
  if (length == 0 || text.size() < length || at(1) < low || at(1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (at(k) < 0x80 || at(k) > 0xbf) return 0;
  return length;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const std::size_t n = sequence_length(text);
    out += n == 0 ? std::string_view("\xef\xbf\xbd") : text.substr(0, n);
    text.remove_prefix(n == 0 ? 1 : n);
  }
  return out;
}

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
