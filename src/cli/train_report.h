// `poet train --report DIR`: real training steps of every strategy at every budget, timed
// beside the simulator's prediction for the platform.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace poet::cli {

struct ReportRequest {
  std::string model;
  std::string onnx_file;  // when given, the ONNX model's graph (its weights do not change a step's time)
  std::string loss = "cross_entropy";  // the ONNX model's, as --loss names it
  int batch_size = 32;
  std::string platform;  // best a profile of this machine for this model and batch size
  std::vector<std::string> strategies, ram_budgets;
  double time_limit_s = 60;
  std::uint64_t seed = 0;
  std::string page_dir;
  bool direct_io = true;
  bool time_nodes_alongside = false;
  int steps = 20;
  std::string output_dir;
  bool json = false;
};

// Prints the table (or JSON) and writes output_dir/prediction.{md,json,svg}. A strategy
// that finds no plan at a budget becomes a row that says why; bad input throws InputError.
void run_prediction_report(const ReportRequest& request);

}  // namespace poet::cli
