#include "poet/util/nearest_name.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "poet/util/units.h"

namespace poet {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t replaced = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({replaced, row[j] + 1, row[j - 1] + 1});
    }
  }
  return row[b.size()];
}

std::optional<std::string> nearest_name(std::string_view word, const std::vector<std::string>& names,
                                        std::size_t max_edits) {
  const auto nearest =
      std::ranges::min_element(names, {}, [&](const std::string& n) { return edit_distance(word, n); });
  if (nearest == names.end() || edit_distance(word, *nearest) > max_edits) return std::nullopt;
  return *nearest;
}

std::string unknown_field(std::string_view key, const std::vector<std::string>& fields) {
  const auto nearest = nearest_name(key, fields);
  return fmt::format("unknown field \"{}\"{}; the fields are {}", text_excerpt(key),
                     nearest ? fmt::format(" (did you mean \"{}\"?)", *nearest) : "", fmt::join(fields, ", "));
}

}  // namespace poet
