#include "poet/util/json_file.h"

#include <fmt/format.h>

#include <fstream>

#include "poet/util/error.h"

namespace poet {

nlohmann::json read_json_file(const std::string& path, std::string_view what) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("cannot read {} '{}': no such file or not readable", what, path));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{} '{}' is not valid JSON: {}", what, path, e.what()));
  }
}

}  // namespace poet
