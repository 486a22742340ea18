// Measured costs in a device profile: what `poet profile` found on a real machine for one
// training graph, node by node, and for its storage. A profile that carries them plans that
// graph with the measured figures instead of the FLOP model (cost_model.h's costs_for).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace poet {

// One node of the profiled graph. name, op and shape identify it: a profile only fits a
// graph whose node at the same position agrees on all three.
struct MeasuredNode {
  std::string name;
  std::string op;    // op_name()
  std::string role;  // role_name(): forward, loss or backward
  std::vector<std::int64_t> shape;
  double compute_time_s = 0;   // median of the timed runs
  double spread_s = 0;         // interquartile range of the timed runs
  double compute_energy_j = 0;
};

struct MeasuredNodes {
  std::string graph;  // Graph::name()
  std::int64_t batch_size = 0;
  int repeats = 0;    // timed runs per node
  // The compute threads the kernels ran on (OpenMP's); 0 where not recorded (profiles from
  // before it was: the JSON key is optional). Node times and the paging charge hold for it.
  int threads = 0;
  // A step's optimizer update, after the plan's instructions (median): the same for every
  // plan, so it prices no choice, but a step takes it. 0 where not recorded (the JSON key
  // is optional).
  double update_s = 0;
  std::vector<MeasuredNode> nodes;  // in graph order, one per node
};

// One tensor size the storage was timed at (page-out then page-in, each waited for).
struct StorageSample {
  std::int64_t bytes = 0;
  double pageout_s = 0, pageout_spread_s = 0;  // median, interquartile range
  double pagein_s = 0, pagein_spread_s = 0;
  // Compute time one transfer of this size took from kernels running beside it (the
  // median run of the load with these transfers, less its median run alone, over the
  // transfers per run); 0 where not measured (profiles before it was: the JSON key is
  // optional).
  double compute_lost_s = 0;
};

struct MeasuredStorage {
  std::string path;     // the folder the page file was in
  bool direct_io = false;  // O_DIRECT: the page cache was bypassed
  std::vector<StorageSample> samples;
};

// The "nodes" and "storage_samples" sections of a device profile JSON (docs/PROFILING.md).
// The readers throw InputError naming `where`, the field and what it must be.
nlohmann::json measured_nodes_to_json(const MeasuredNodes& m);
MeasuredNodes measured_nodes_from_json(const nlohmann::json& j, std::string_view where);
nlohmann::json measured_storage_to_json(const MeasuredStorage& m);
MeasuredStorage measured_storage_from_json(const nlohmann::json& j, std::string_view where);

}  // namespace poet
