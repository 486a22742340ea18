#include "poet/util/json_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "poet/util/input_file.h"
#include "poet/util/nearest_name.h"
#include "poet/util/quoting.h"

namespace poet {
namespace {

// Reads JSON text a piece at a time and says, as soon as the bytes show it, why they cannot be
// one of poet's files: a NUL byte, a first character no JSON value begins with, nesting deeper
// than kMaxJsonDepth, text after the outermost object or array has ended. Read from a pipe or
// a device, a wrong input is refused at its first bytes, not after kMaxInputFileBytes of it.
// (nlohmann's parser callback could count the depth too, but with a callback its parser scans
// an object's parent at each object's end, which made a graph of 100,000 nodes take seconds to
// parse: quadratic in the nodes.)
class JsonTextScan {
 public:
  std::optional<std::string> read(std::string_view piece) {
    if (offset_ == 0)
      if (const auto problem = utf16_problem(piece)) return "it is " + *problem;
    for (const char c : piece) {
      const std::size_t at = offset_++;
      if (c == '\0')
        return fmt::format("it holds a NUL byte (at byte {}): it is a binary file or device, not JSON text", at);
      if (in_string_) {
        if (escaped_) escaped_ = false;
        else if (c == '\\') escaped_ = true;
        else if (c == '"') in_string_ = false;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
      if (ended_) return fmt::format("text goes on after its outermost value ends (at byte {})", at);
      if (!started_) {
        started_ = true;
        const bool ascii = static_cast<unsigned char>(c) < 0x80;  // a UTF-8 BOM is for the parser to judge
        if (ascii && std::string_view("{[\"-0123456789tfn").find(c) == std::string_view::npos)
          return fmt::format("it begins with '{}', and JSON text begins with '{{'", one_line(std::string(1, c)));
      }
      if (c == '"') {
        in_string_ = true;
      } else if (c == '[' || c == '{') {
        if (depth_ >= kMaxJsonDepth)
          return fmt::format("its values nest more than {} levels deep; poet's formats nest a few", kMaxJsonDepth);
        ++depth_;
      } else if ((c == ']' || c == '}') && depth_ > 0) {
        ended_ = --depth_ == 0;
      }
    }
    return std::nullopt;
  }

 private:
  std::size_t offset_ = 0;
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false, started_ = false, ended_ = false;
};

// Builds the value as nlohmann::json::parse does, but stops at a key an object already has:
// the parser would keep the last of the two without a word, and a hand-edited file's second
// "name" or "compute" section would silently win over the first.
class OneOfEachKey {
 public:
  using json = nlohmann::json;
  explicit OneOfEachKey(json& result) : dom_(result) {}

  bool null() { return dom_.null(); }
  bool boolean(bool b) { return dom_.boolean(b); }
  bool number_integer(json::number_integer_t n) { return dom_.number_integer(n); }
  bool number_unsigned(json::number_unsigned_t n) { return dom_.number_unsigned(n); }
  bool number_float(json::number_float_t n, const json::string_t& text) { return dom_.number_float(n, text); }
  bool string(json::string_t& s) { return dom_.string(s); }
  bool binary(json::binary_t& b) { return dom_.binary(b); }
  bool start_array(std::size_t n) {
    names_.push_back(container_name());
    return dom_.start_array(n);
  }
  bool end_array() {
    names_.pop_back();
    last_key_.clear();
    return dom_.end_array();
  }
  bool start_object(std::size_t n) {
    names_.push_back(container_name());
    keys_.emplace_back();
    return dom_.start_object(n);
  }
  bool key(json::string_t& k) {
    if (!keys_.back().insert(k).second) {
      duplicate_ = names_.back().empty() ? fmt::format("the key \"{}\" twice in one object", one_line(k))
                                         : fmt::format("the key \"{}\" twice in one object (in \"{}\")",
                                                       one_line(k), one_line(names_.back()));
      return false;
    }
    last_key_ = k;
    return dom_.key(k);
  }
  bool end_object() {
    names_.pop_back();
    keys_.pop_back();
    last_key_.clear();
    return dom_.end_object();
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
    return dom_.parse_error(position, token, e);  // throws e, as parse() does
  }

  // "the key "name" twice in one object (in "compute")", once key() has stopped the parse.
  const std::string& duplicate() const { return duplicate_; }

 private:
  // A container is named by the key whose value it is, an array's elements by the array's:
  // the objects of "nodes" are in "nodes".
  std::string container_name() {
    if (!last_key_.empty()) return std::exchange(last_key_, {});
    return names_.empty() ? std::string() : names_.back();
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::vector<std::string> names_;                      // of the containers open, outermost first
  std::vector<std::unordered_set<std::string>> keys_;  // of the objects open
  std::string last_key_, duplicate_;
};

InputError not_json(std::string_view what, std::string_view origin, const std::string& why) {
  return InputError(fmt::format("{} '{}' is not valid JSON: {}", what, origin, why));
}

// Parses text JsonTextScan has read whole without objection.
nlohmann::json parse_scanned(std::string_view text, std::string_view what, std::string_view origin) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw not_json(what, origin, "it is empty; give a file poet wrote (docs/FORMATS.md)");
  try {
    nlohmann::json value;
    OneOfEachKey sax(value);
    if (!nlohmann::json::sax_parse(text.begin(), text.end(), &sax))
      throw InputError(fmt::format("{} '{}' has {}, of which poet would read only the last; keep one", what, origin,
                                   sax.duplicate()));
    return value;
  } catch (const nlohmann::json::out_of_range& e) {
    // 406: a number beyond a double's range, such as 1e400.
    throw not_json(what, origin, fmt::format("{}; numbers must be finite", json_error_text(e)));
  } catch (const nlohmann::json::exception& e) {
    throw not_json(what, origin, json_error_text(e));
  }
}

}  // namespace

std::string json_error_text(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const auto end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

nlohmann::json parse_json(std::string_view text, std::string_view what, std::string_view origin) {
  if (const auto why = JsonTextScan().read(text)) throw not_json(what, origin, *why + " (docs/FORMATS.md)");
  return parse_scanned(text, what, origin);
}

nlohmann::json read_json_file(const std::string& path, std::string_view what) {
  JsonTextScan scan;
  const std::string text = read_input_file(path, what, kMaxInputFileBytes, [&](std::string_view piece) {
    if (const auto why = scan.read(piece)) throw not_json(what, path, *why + " (docs/FORMATS.md)");
  });
  return parse_scanned(text, what, path);
}

std::string json_text(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::string> unknown_field_of(const nlohmann::json& object, const std::vector<std::string>& fields) {
  for (const auto& [key, value] : object.items())
    if (std::ranges::find(fields, key) == fields.end()) return unknown_field(key, fields);
  return std::nullopt;
}

std::optional<std::string> version_problem(const nlohmann::json& file, int version) {
  if (!file.contains("version"))
    return fmt::format("no \"version\"; this poet reads version {} (add \"version\": {})", version, version);
  if (file["version"] == version) return std::nullopt;
  return fmt::format("unsupported version {}; this poet reads version {}", json_excerpt(file["version"]), version);
}

std::string json_excerpt(const nlohmann::json& value) {
  if (value.is_array()) return fmt::format("an array of {} values", value.size());
  if (value.is_object()) return "an object";
  return text_excerpt(json_text(value));
}

}  // namespace poet
