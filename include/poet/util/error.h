// Three kinds of failure (see docs/ARCHITECTURE.md):
//  - InputError: the user gave something wrong; the message names the value and the fix.
//  - InternalError: an invariant of poet itself broke (a bug); carries file:line.
//  - IoError: the system failed us (a file cannot be written, a full disk); the message
//    names the path and the reason.
#pragma once

#include <stdexcept>
#include <string>

namespace poet {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failure of the system around poet (a file that cannot be written, a full disk).
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void fail_internal(const char* file, int line, const std::string& what);

// What to do when a system call failed with `err` because of this process's limits, not
// its path or disk, for an error message: "; ..." for too many open files (`ulimit -n`) or
// processes (`ulimit -u`, from fork or a thread's start, with the address-space limit,
// `ulimit -v`, when one is set). Empty for any other error.
std::string process_limit_advice(int err);

// Runs `work`; an InputError or IoError it throws is thrown again, the same kind, with the
// message extend(what): what the failure leaves behind and how to go on from it.
template <class Work, class Extend>
auto extending_errors(Work&& work, Extend&& extend) {
  try {
    return work();
  } catch (const InputError& e) {
    throw InputError(extend(std::string(e.what())));
  } catch (const IoError& e) {
    throw IoError(extend(std::string(e.what())));
  }
}

}  // namespace poet

// Checks an invariant that only a bug in poet can break.
#define POET_CHECK(cond, what)                                   \
  do {                                                           \
    if (!(cond)) ::poet::fail_internal(__FILE__, __LINE__, what); \
  } while (0)
