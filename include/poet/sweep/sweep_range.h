// The value ranges `poet sweep` is given (--budgets, --ablation-deadlines, ...), parsed in the
// library so the fuzz target and the tests call the very function the command line calls.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace poet {

// At most this many values in one range: each is a solve or a training run.
inline constexpr std::size_t kMaxSweepRangeValues = 200;

// "30%:100%:5%" (first:last:step), "50%,70%" or one value, `unit` "%" (percents, as
// parse_percent) or "" (positive multiples up to 1e6), to at most kMaxSweepRangeValues
// values; anything else throws InputError naming `option` and the form to write.
std::vector<double> parse_range(const std::string& text, const std::string& option, const std::string& unit);

// One value of the same forms (--runtime-budget, --ablation-budget): a range or a list
// throws InputError, rather than running its first value alone.
double parse_one_value(const std::string& text, const std::string& option, const std::string& unit);

}  // namespace poet
