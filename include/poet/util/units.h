// Plain units for people: bytes with binary suffixes, seconds as ms/s, joules as mJ/J.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace poet {

std::string format_bytes(double bytes);          // "2.34 MiB", "512 B"
std::string format_bytes_exact(std::int64_t bytes);  // "2,453,760 B"
std::string format_seconds(double seconds);      // "12.3 ms", "4.56 s", "7.8 us"
std::string format_joules(double joules);        // "3.21 mJ", "7.89 J"
std::string format_count(double count);           // "1.23 G", "456 M", "789 k"
// Rounded to a whole number with its thousands marked: "1,048,576", "-46,208". |value| below 1.8e19.
std::string format_grouped(double value);
// "1 page-in", "2 page-ins", "0 page-ins"; `plural` where it is not the noun and an s ("batches").
std::string counted(std::size_t n, std::string_view noun, std::string_view plural = {});

// The largest size poet reads from a user, 2^52 bytes (4 PiB): far above any device, and
// every sum of such sizes stays exact in a double.
inline constexpr std::int64_t kMaxBytes = std::int64_t{1} << 52;
// The largest percent of a peak a budget may ask for (1000% is ten times the peak).
inline constexpr double kMaxPercent = 1000;

// The whole of `text` as a plain decimal number ("70", "2.5", "1e6"): none for anything
// else, such as "70abc", "0x10", "inf", "nan", "1e400" or "".
std::optional<double> parse_decimal(std::string_view text);

// Parses "3000000", "3e6", "512B", "64KB", "64KiB", "2.5 MB", "1GiB" (KB = 1000, KiB = 1024),
// up to kMaxBytes. Throws InputError naming `what` and the accepted forms.
std::int64_t parse_bytes(std::string_view text, std::string_view what);

// Parses "70%" or "70" (decimal, above 0 and at most kMaxPercent) to 70. Throws InputError naming `what`.
double parse_percent(std::string_view text, std::string_view what);

// `text` for an error message: whole up to 40 characters, else its start and "...".
std::string text_excerpt(std::string_view text);

// `text` without the spaces and tabs around it ("poet, dtr" split at the comma).
std::string_view trim_spaces(std::string_view text);

}  // namespace poet
