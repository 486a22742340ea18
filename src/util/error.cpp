#include "poet/util/error.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <cerrno>
#include <string>

namespace poet {

std::string process_limit_advice(int err) {
  const auto limit = [](int resource) {
    struct rlimit l {};
    return ::getrlimit(resource, &l) == 0 && l.rlim_cur != RLIM_INFINITY ? std::to_string(l.rlim_cur)
                                                                          : std::string("?");
  };
  switch (err) {
    case EMFILE:
      return fmt::format("; this process may have {} files open (ulimit -n {}): raise the limit (ulimit -n 4096) "
                         "and run again",
                         limit(RLIMIT_NOFILE), limit(RLIMIT_NOFILE));
    case ENFILE: return "; the system's table of open files is full: close other programs, then run again";
    case EAGAIN: {
      // A thread's or process's start fails so when its stack cannot be mapped, too.
      struct rlimit space {};
      if (::getrlimit(RLIMIT_AS, &space) == 0 && space.rlim_cur != RLIM_INFINITY)
        return fmt::format("; a new thread or process needs a slot and memory for its stack: this user may run {} "
                           "processes (ulimit -u {}), and this process may map {} KiB (ulimit -v {}): raise the "
                           "limits (ulimit -v unlimited)",
                           limit(RLIMIT_NPROC), limit(RLIMIT_NPROC), space.rlim_cur / 1024, space.rlim_cur / 1024);
      return fmt::format("; this user may run {} processes (ulimit -u {}): end some, or raise the limit",
                         limit(RLIMIT_NPROC), limit(RLIMIT_NPROC));
    }
    default: return "";
  }
}

void fail_internal(const char* file, int line, const std::string& what) {
  throw InternalError(fmt::format("internal error at {}:{}: {} (this is a bug in poet)", file, line, what));
}

}  // namespace poet
