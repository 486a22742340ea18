#include "poet/util/side_by_side.h"

#include <exception>
#include <thread>
#include <vector>

namespace poet {

void run_side_by_side(std::size_t count, const std::function<void(std::size_t)>& task) {
  std::vector<std::exception_ptr> failures(count);
  std::vector<std::thread> threads;
  threads.reserve(count);
  try {
    for (std::size_t i = 0; i < count; ++i)
      threads.emplace_back([&, i] {
        try {
          task(i);
        } catch (...) {
          failures[i] = std::current_exception();
        }
      });
  } catch (...) {
    // A thread that cannot start (ulimit -u, ulimit -v): the started ones are joined first, or
    // their destructors would end the process (std::terminate).
    for (std::thread& t : threads) t.join();
    throw;
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

}  // namespace poet
