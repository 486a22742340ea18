#include "poet/sweep/sweep_range.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "poet/util/error.h"
#include "poet/util/units.h"

namespace poet {

std::vector<double> parse_range(const std::string& text, const std::string& option, const std::string& unit) {
  const auto number = [&](const std::string& part) {
    if (unit == "%") return parse_percent(part, option);
    const std::optional<double> v = parse_decimal(part);
    if (!v || !(*v > 0 && *v <= 1e6))
      throw InputError(fmt::format("{}: '{}' is not a multiple of the compute-once time; write a number above 0 and at "
                                   "most 1e6, e.g. 1.5",
                                   option, text_excerpt(part)));
    return *v;
  };
  std::vector<std::string> parts;
  const char separator = text.find(':') != std::string::npos ? ':' : ',';
  for (std::size_t begin = 0;;) {
    const std::size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  const auto too_many = [&](double count) {
    return InputError(fmt::format("{}: '{}' makes {:.0f} values; at most {} are run, use a larger step or fewer values",
                                  option, text_excerpt(text), count, kMaxSweepRangeValues));
  };
  std::vector<double> values;
  if (separator == ',' || parts.size() == 1) {
    if (parts.size() > kMaxSweepRangeValues) throw too_many(static_cast<double>(parts.size()));
    for (const auto& p : parts) {
      const double v = number(p);
      if (std::ranges::find(values, v) != values.end())
        throw InputError(fmt::format("{} lists {}{} twice; give each value once", option, v, unit == "%" ? "%" : "x"));
      values.push_back(v);
    }
    return values;
  }
  if (parts.size() != 3)
    throw InputError(fmt::format("{}: '{}' must be first:last:step, e.g. 30%:100%:10%", option, text_excerpt(text)));
  const double first = number(parts[0]), last = number(parts[1]), step = number(parts[2]);
  if (last < first)
    throw InputError(fmt::format("{}: '{}' ends below where it starts; write first:last:step with first <= last",
                                 option, text_excerpt(text)));
  // Counted before any value is made: a tiny step must not fill memory.
  const double count = std::floor((last - first) / step + 1e-9) + 1;
  if (count > static_cast<double>(kMaxSweepRangeValues)) throw too_many(count);
  for (int k = 0; k < static_cast<int>(count); ++k) values.push_back(first + k * step);
  return values;
}

double parse_one_value(const std::string& text, const std::string& option, const std::string& unit) {
  const std::vector<double> values = parse_range(text, option, unit);
  if (values.size() != 1)
    throw InputError(fmt::format("{}: '{}' makes {} values; it takes one, e.g. {}", option, text_excerpt(text),
                                 values.size(), unit == "%" ? "70%" : "1.5"));
  return values.front();
}

}  // namespace poet
