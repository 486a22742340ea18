#include "poet/util/json_file.h"

#include <fmt/format.h>

#include "poet/util/input_file.h"

namespace poet {
namespace {

struct TooDeep {};

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
  const nlohmann::json::parser_callback_t limit_depth = [](int depth, nlohmann::json::parse_event_t event,
                                                           nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw TooDeep{};
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), limit_depth);
  } catch (const TooDeep&) {
    throw bad(fmt::format("its values nest more than {} levels deep; poet's formats nest a few (docs/FORMATS.md)",
                          kMaxJsonDepth));
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
