#include "poet/util/units.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "poet/util/error.h"

namespace poet {

namespace {

// Three significant digits, but whole numbers from 100 up: 1,020 KiB (units of 1,024) is
// "1020 KiB", where "{:.3g}" wrote "1.02e+03 KiB"; from 10,000 up with their thousands
// marked (bert's step on m4: "46,208 s", not "4.62e+04 s").
std::string in_unit(double value, const char* suffix) {
  const double size = std::fabs(value);
  if (size >= 100 && size < 1e4) return fmt::format("{:.0f} {}", value, suffix);
  if (size >= 1e4 && size < 1e15) return fmt::format("{} {}", format_grouped(value), suffix);
  return fmt::format("{:.3g} {}", value, suffix);
}

// Picks the largest unit not above |value| (the smallest one for tiny values). Zero prints
// in the base unit.
template <std::size_t N>
std::string scaled(double value, const std::array<std::pair<double, const char*>, N>& units, const char* base) {
  if (value == 0) return fmt::format("0 {}", base);
  for (const auto& [scale, suffix] : units)
    if (std::fabs(value) >= scale) return in_unit(value / scale, suffix);
  return in_unit(value / units.back().first, units.back().second);
}

}  // namespace

std::string format_bytes(double bytes) {
  if (std::fabs(bytes) < 1024) return fmt::format("{:.0f} B", bytes);
  static constexpr std::array units{std::pair{1024.0 * 1024 * 1024 * 1024, "TiB"},
                                    std::pair{1024.0 * 1024 * 1024, "GiB"}, std::pair{1024.0 * 1024, "MiB"},
                                    std::pair{1024.0, "KiB"}};
  return scaled(bytes, units, "B");
}

std::string format_grouped(double value) {
  const auto whole = static_cast<unsigned long long>(std::round(std::fabs(value)));
  return fmt::format("{}{}", value < 0 ? "-" : "", fmt::group_digits(whole));
}

std::string format_bytes_exact(std::int64_t bytes) {
  std::string digits = std::to_string(bytes < 0 ? -bytes : bytes);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (bytes < 0 ? "-" : "") + out + " B";
}

std::string counted(std::size_t n, std::string_view noun, std::string_view plural) {
  if (n == 1) return fmt::format("1 {}", noun);
  return plural.empty() ? fmt::format("{} {}s", n, noun) : fmt::format("{} {}", n, plural);
}

std::string format_seconds(double seconds) {
  static constexpr std::array units{std::pair{1.0, "s"}, std::pair{1e-3, "ms"}, std::pair{1e-6, "us"},
                                    std::pair{1e-9, "ns"}};
  return scaled(seconds, units, "s");
}

std::string format_joules(double joules) {
  static constexpr std::array units{std::pair{1e3, "kJ"}, std::pair{1.0, "J"}, std::pair{1e-3, "mJ"}, std::pair{1e-6, "uJ"},
                                    std::pair{1e-9, "nJ"}};
  return scaled(joules, units, "J");
}

std::string format_count(double count) {
  if (std::fabs(count) < 1000) return fmt::format("{:.0f}", count);
  static constexpr std::array units{std::pair{1e12, "T"}, std::pair{1e9, "G"}, std::pair{1e6, "M"},
                                    std::pair{1e3, "k"}};
  return scaled(count, units, "");
}

std::optional<double> parse_decimal(std::string_view text) {
  // Plain decimal only: digits, one point, an exponent. from_chars alone would also read
  // "inf", "nan" and, for hexadecimal, "0x10" as 0; and stops early without saying so.
  for (const char c : text)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
      return std::nullopt;
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::general);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::int64_t parse_bytes(std::string_view text, std::string_view what) {
  const auto bad = [&] {
    return InputError(fmt::format("{}: '{}' is not a size in bytes; write e.g. 3000000, 3MB, 2.5MiB or 512KiB (at most "
                                  "{})",
                                  what, text_excerpt(text), format_bytes(kMaxBytes)));
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
                             text[i] == 'e' || text[i] == 'E' || text[i] == '+'))
    ++i;
  const std::optional<double> number = parse_decimal(text.substr(0, i));
  if (!number) throw bad();
  std::string suffix;
  for (char c : text.substr(i))
    if (c != ' ') suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static constexpr std::array units{
      std::pair{"", 1.0},          std::pair{"b", 1.0},          std::pair{"kb", 1e3},
      std::pair{"mb", 1e6},        std::pair{"gb", 1e9},         std::pair{"kib", 1024.0},
      std::pair{"mib", 1048576.0}, std::pair{"gib", 1073741824.0}, std::pair{"k", 1e3},
      std::pair{"m", 1e6},         std::pair{"g", 1e9},          std::pair{"tb", 1e12},
      std::pair{"tib", 1099511627776.0}, std::pair{"t", 1e12}};  // the limit is said in TiB
  for (const auto& [name, scale] : units) {
    if (suffix == name) {
      const double bytes = *number * scale;
      if (!(bytes >= 0) || bytes > static_cast<double>(kMaxBytes)) throw bad();
      return static_cast<std::int64_t>(std::llround(bytes));
    }
  }
  throw bad();
}

double parse_percent(std::string_view text, std::string_view what) {
  const std::optional<double> number = parse_decimal(text.ends_with('%') ? text.substr(0, text.size() - 1) : text);
  if (!number || !(*number > 0 && *number <= kMaxPercent))
    throw InputError(fmt::format("{}: '{}' is not a percent; write a number above 0 and at most {:g} followed by %, "
                                 "e.g. 70%",
                                 what, text_excerpt(text), kMaxPercent));
  return *number;
}

std::string text_excerpt(std::string_view text) {
  return text.size() <= 40 ? std::string(text) : std::string(text.substr(0, 37)) + "...";
}

std::string_view trim_spaces(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

}  // namespace poet
