#include "poet/util/error.h"

#include <fmt/format.h>

namespace poet {

void fail_internal(const char* file, int line, const std::string& what) {
  throw InternalError(fmt::format("internal error at {}:{}: {} (this is a bug in poet)", file, line, what));
}

}  // namespace poet
