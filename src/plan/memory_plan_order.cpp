#include "poet/plan/memory_plan.h"

namespace poet {

std::vector<BufferLife> in_plan_order(std::vector<BufferLife> buffers) {
  for (BufferLife& b : buffers) {
    b.alloc_rank = b.created_by;
    b.release_rank = b.released_by;
  }
  return buffers;
}

}  // namespace poet
