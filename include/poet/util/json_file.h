// Reading JSON files with errors a user can act on: the JSON library's own messages never
// reach the user, and no value is printed whole.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "poet/util/error.h"
#include "poet/util/units.h"  // text_excerpt

namespace poet {

// poet's formats nest a few levels; deeper input is refused while it is parsed, so that no
// recursive walk over a hostile value (printing it, copying it) can exhaust the stack.
inline constexpr int kMaxJsonDepth = 32;

// Parses `text`, the contents of `origin`. Throws InputError naming `what` ("graph",
// "schedule", ...) and `origin`: for a syntax error the line and column, for nesting deeper
// than kMaxJsonDepth, for a number beyond a double's range.
nlohmann::json parse_json(std::string_view text, std::string_view what, std::string_view origin);

// Reads the file at `path` (read_input_file's checks) and parses it as parse_json does.
nlohmann::json read_json_file(const std::string& path, std::string_view what);

// The text of `value` (nlohmann's dump, indented by `indent` spaces; one line if negative).
// Strings come from the command line too (a --platform path, a profile's --name), where Linux
// allows any bytes: invalid UTF-8 is written as U+FFFD, where nlohmann's dump would throw
// after the work that made the value (a whole sweep or profile).
std::string json_text(const nlohmann::json& value, int indent = -1);

// A short description of a value for an error message: a scalar as written (cut at 40
// characters), "an array of 3 values", "an object".
std::string json_excerpt(const nlohmann::json& value);

// The message for an object's first key that is none of `fields` (nearest_name.h's
// unknown_field: "unknown field "M_outt" (did you mean "M_out"?); ..."); nothing if every key
// is one. Files refuse such fields rather than drop them: a mistyped optional field would
// silently keep its default.
std::optional<std::string> unknown_field_of(const nlohmann::json& object, const std::vector<std::string>& fields);

// Why a file's "version" is not `version`, the one this poet reads: "unsupported version 2;
// this poet reads version 1" (or "no \"version\" ..."). Nothing if it is.
std::optional<std::string> version_problem(const nlohmann::json& file, int version);

// The JSON library's message without its "[json.exception.type_error.302] " prefix.
std::string json_error_text(const nlohmann::json::exception& e);

// Runs `convert` (a *_from_json) and turns a JSON library exception that escapes it (a
// field of a type the converter did not check) into InputError naming `what` and `origin`.
template <class Convert>
auto convert_json(std::string_view what, std::string_view origin, Convert&& convert) -> decltype(convert()) {
  try {
    return convert();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string(what) + " '" + std::string(origin) + "': a field has the wrong type (" +
                     json_error_text(e) + "); see docs/FORMATS.md");
  }
}

}  // namespace poet
