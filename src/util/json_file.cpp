#include "poet/util/json_file.h"

#include <fmt/format.h>

#include "poet/util/input_file.h"

namespace poet {
namespace {

// True when a value in `text` nests more than kMaxJsonDepth levels: a scan of the brackets
// outside strings, before parsing. (nlohmann's parser callback could count the depth too, but
// with a callback its parser scans an object's parent at each object's end, which made a
// graph of 100,000 nodes take seconds to parse: quadratic in the nodes.)
bool nests_too_deep(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (depth >= kMaxJsonDepth) return true;
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace

std::string json_error_text(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const auto end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

nlohmann::json parse_json(std::string_view text, std::string_view what, std::string_view origin) {
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("{} '{}' is not valid JSON: {}", what, origin, why));
  };
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw bad("it is empty; give a file poet wrote (docs/FORMATS.md)");
  if (nests_too_deep(text))
    throw bad(fmt::format("its values nest more than {} levels deep; poet's formats nest a few (docs/FORMATS.md)",
                          kMaxJsonDepth));
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::out_of_range& e) {
    // 406: a number beyond a double's range, such as 1e400.
    throw bad(fmt::format("{}; numbers must be finite", json_error_text(e)));
  } catch (const nlohmann::json::exception& e) {
    throw bad(json_error_text(e));
  }
}

nlohmann::json read_json_file(const std::string& path, std::string_view what) {
  return parse_json(read_input_file(path, what), what, path);
}

std::string json_excerpt(const nlohmann::json& value) {
  if (value.is_array()) return fmt::format("an array of {} values", value.size());
  if (value.is_object()) return "an object";
  return text_excerpt(value.dump());
}

}  // namespace poet
