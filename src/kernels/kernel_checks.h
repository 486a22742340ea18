// Size checks shared by the kernels. A span of the wrong size means the caller computed
// an offset or a shape wrongly: a bug, reported with the kernel and operand names. The
// message is built only on failure, so a passing check costs a compare and allocates
// nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace poet::kernels::detail {

[[noreturn]] void fail_size(const char* kernel, const char* operand, std::size_t actual, std::int64_t expected);

template <typename T>
inline void expect_size(const char* kernel, const char* operand, std::span<T> span, std::int64_t expected) {
  if (static_cast<std::int64_t>(span.size()) != expected) fail_size(kernel, operand, span.size(), expected);
}

// For the scratch buffer: more than enough is fine.
template <typename T>
inline void expect_at_least(const char* kernel, const char* operand, std::span<T> span, std::int64_t needed) {
  if (static_cast<std::int64_t>(span.size()) < needed) fail_size(kernel, operand, span.size(), needed);
}

}  // namespace poet::kernels::detail
