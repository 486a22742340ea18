#include "poet/baselines/by_name.h"

#include "poet/baselines/capuchin.h"
#include "poet/baselines/chen.h"
#include "poet/baselines/dtr.h"
#include "poet/baselines/pofo.h"
#include "poet/baselines/revolve.h"

namespace poet {

const std::map<std::string, BaselineForBudget>& baselines_for_budget() {
  static const std::map<std::string, BaselineForBudget> all = {
      {"chen_sqrt", chen_sqrt_for_budget}, {"chen_greedy", chen_greedy_for_budget},
      {"revolve", revolve_for_budget},     {"dtr", dtr_for_budget},
      {"capuchin", capuchin_for_budget},   {"pofo", pofo_for_budget}};
  return all;
}

}  // namespace poet
