// Plain units for people: bytes with binary suffixes, seconds as ms/s, joules as mJ/J.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace poet {

std::string format_bytes(double bytes);          // "2.34 MiB", "512 B"
std::string format_bytes_exact(std::int64_t bytes);  // "2,453,760 B"
std::string format_seconds(double seconds);      // "12.3 ms", "4.56 s", "7.8 us"
std::string format_joules(double joules);        // "3.21 mJ", "7.89 J"
std::string format_count(double count);          // "1.23 G", "456 M", "789 k"

// Parses "3000000", "3e6", "512B", "64KB", "64KiB", "2.5 MB", "1GiB" (KB = 1000, KiB = 1024).
// Throws InputError naming `what` and the accepted forms.
std::int64_t parse_bytes(std::string_view text, std::string_view what);

}  // namespace poet
