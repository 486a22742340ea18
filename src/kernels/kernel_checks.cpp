#include "kernel_checks.h"

#include <fmt/format.h>

#include "poet/util/error.h"

namespace poet::kernels::detail {

void fail_size(const char* kernel, const char* operand, std::size_t actual, std::int64_t expected) {
  fail_internal(__FILE__, __LINE__,
                fmt::format("{}: {} has {} elements, the shape needs {}", kernel, operand, actual, expected));
}

}  // namespace poet::kernels::detail
