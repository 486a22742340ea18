// How many random cases the heaviest tests draw. scripts/test.sh sets POET_TEST_REDUCED=1
// for the AddressSanitizer + UBSan pass (a Debug build, 10-50x slower than the normal one),
// where those tests draw a fraction of their cases: the sanitizers check memory safety and
// undefined behaviour, which a smaller sample exercises too, and CI must stay under 30
// minutes on 2 cores. The normal pass draws every case. A count, never a time.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace poet::testing {

inline bool reduced_test_counts() {
  const char* value = std::getenv("POET_TEST_REDUCED");
  return value != nullptr && std::string_view(value) == "1";
}

// `full` normally; full / divisor (at least 1) in the reduced pass.
inline int test_cases(int full, int divisor = 4) {
  return reduced_test_counts() ? std::max(1, full / divisor) : full;
}

}  // namespace poet::testing
