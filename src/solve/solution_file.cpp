#include "solution_file.h"

#include <fmt/format.h>

#include <cmath>
#include <sstream>
#include <unordered_map>

#include "poet/util/atomic_file.h"
#include "poet/util/error.h"
#include "poet/util/input_file.h"

namespace poet::solve_internal {
namespace {

bool parse_number(const std::string& word, double& value) {
  std::size_t used = 0;
  try {
    value = std::stod(word, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == word.size() && std::isfinite(value);
}

}  // namespace

std::vector<double> read_solution_file(const MilpModel& model, const std::string& path) {
  // read_input_file refuses a folder, a device without end or a huge file with a message;
  // an ifstream would open a folder and read it as empty ("names no column").
  std::istringstream in(
      read_input_file(path, "--solution file", kMaxInputFileBytes, text_inspector("--solution file", path)));
  std::unordered_map<std::string, int> column_of;
  for (int c = 0; c < model.columns(); ++c) column_of.emplace(model.column_name(c), c);

  std::vector<double> x(static_cast<std::size_t>(model.columns()), 0.0);
  std::size_t named = 0, line_number = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_number;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string word;
    int column = -1;
    while (words >> word) {
      if (column < 0) {
        if (const auto it = column_of.find(word); it != column_of.end()) column = it->second;
        continue;
      }
      double value = 0;
      if (!parse_number(word, value))
        throw InputError(fmt::format("--solution: '{}' line {}: the value of {} is '{}', not a number", path,
                                     line_number, model.column_name(column), word));
      x[static_cast<std::size_t>(column)] = value;
      ++named;
      break;
    }
  }
  if (named == 0)
    throw InputError(fmt::format("--solution: '{}' names no column of this model (R_t_i, Sram_t_i, ...); it must be a "
                                 "solution of the model --write-model wrote for the same graph, platform, budget and "
                                 "options",
                                 path));
  return x;
}

void write_solution_file(const MilpModel& model, const std::vector<double>& x, const std::string& path) {
  std::string text = "# Columns\n";  // HiGHS's header; Gurobi and SCIP skip '#' lines
  for (int c = 0; c < model.columns(); ++c)
    text += fmt::format("{} {}\n", model.column_name(c), x[static_cast<std::size_t>(c)]);
  write_file_atomically(path, text);
}

}  // namespace poet::solve_internal
