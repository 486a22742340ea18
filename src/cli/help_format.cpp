#include "help_format.h"

#include <fmt/format.h>

namespace poet::cli {

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
  std::string out;
  if (opt->get_type_size() != 0) {
    // CLI11 names the C++ type, then each validator's description after a colon: the
    // description says more ("TEXT:FILE" is a file, "INT:a whole number from 1 to 64").
    std::string type = opt->get_type_name();
    if (const auto colon = type.find(':'); colon != std::string::npos) type = type.substr(colon + 1);
    if (!type.empty()) out += " " + type;
    // A list's default is CLI11's "[100%]": shown as it is typed, "100%".
    std::string default_text = opt->get_default_str();
    if (default_text.size() >= 2 && default_text.front() == '[' && default_text.back() == ']')
      default_text = default_text.substr(1, default_text.size() - 2);
    if (!default_text.empty()) out += fmt::format(" (default {})", default_text);
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
    if (opt->get_required()) out += " " + get_label("REQUIRED");
  }
  for (const auto& [label, options] : {std::pair{"Needs", opt->get_needs()}, std::pair{"Excludes", opt->get_excludes()}})
    if (!options.empty()) {
      out += " " + get_label(label) + ":";
      for (const CLI::Option* other : options) out += " " + other->get_name();
    }
  return out;
}

}  // namespace poet::cli
