// Text from files users hand poet (a node's name in an ONNX model or a graph JSON, a
// graph's name) written into other formats, where some characters would end what holds it:
// a newline ends a plan's comment line, "*/" a C comment, '"' a C string. A model from
// anywhere must not be able to write code into the firmware's header.
#pragma once

#include <string>
#include <string_view>

namespace poet {

// `text` on one line: each control character (a newline, an escape, DEL) written as a C
// escape (`\n`, `\x1b`), so that a line-based format and a terminal take it as text.
std::string one_line(std::string_view text);

// `text` with each byte that is not part of well-formed UTF-8 written as U+FFFD (the
// replacement character): a path may hold any bytes, and an XML file with one such byte is
// refused whole by its reader.
std::string valid_utf8(std::string_view text);

// `text` for inside a C comment: one_line, with "*/" written "*\/" (the comment goes on).
std::string c_comment_text(std::string_view text);

// `text` for inside a C string literal: '"', '\' and '?' (a trigraph's start) escaped, and
// control characters as three-digit octal escapes (a hex escape would run on into the
// digits after it).
std::string c_string_text(std::string_view text);

}  // namespace poet
