// Work on threads of its own, whose failures come back to the caller: an exception that
// leaves a std::thread ends the whole process (std::terminate), as `ulimit -n 5` showed when
// the window search could not open the pipe to a CBC child.
#pragma once

#include <cstddef>
#include <functional>

namespace poet {

// Runs task(0), ..., task(count - 1), each on a thread of its own, and waits for all of them;
// then rethrows the exception of the lowest-numbered task that threw, if any.
void run_side_by_side(std::size_t count, const std::function<void(std::size_t)>& task);

}  // namespace poet
