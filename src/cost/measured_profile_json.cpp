// Reading and writing the measured sections of a device profile. Every figure is checked
// as it is read, so a hand-edited profile fails at load time, naming the entry.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>

#include "poet/cost/measured_profile.h"
#include "poet/graph/graph.h"
#include "poet/util/error.h"
#include "poet/util/json_file.h"

namespace poet {
namespace {

using nlohmann::json;

const json& member(const json& j, const char* key, std::string_view where) {
  if (!j.is_object() || !j.contains(key))
    throw InputError(fmt::format("{}: missing \"{}\"; re-profile with `poet profile` (docs/PROFILING.md)", where, key));
  return j[key];
}

// A measured time or energy of one node or transfer: no real one is near a year (3e7 s), and
// the bound keeps every sum of them finite.
constexpr double kMaxMeasured = 1e9;
constexpr std::int64_t kMaxThreads = 1 << 16;  // compute threads a profile may record

double seconds_or_joules(const json& j, const char* key, std::string_view where) {
  const json& v = member(j, key, where);
  if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= kMaxMeasured))
    throw InputError(fmt::format("{}: \"{}\" is {}; it must be a number from 0 to {:g}", where, key, json_excerpt(v),
                                 kMaxMeasured));
  return v.get<double>();
}

std::string text(const json& j, const char* key, std::string_view where) {
  const json& v = member(j, key, where);
  if (!v.is_string()) throw InputError(fmt::format("{}: \"{}\" is {}; it must be a string", where, key, json_excerpt(v)));
  return v.get<std::string>();
}

// A count (batch size, repeats, nodes, bytes): a non-negative integer up to `max`.
std::int64_t count(const json& j, const char* key, std::string_view where, std::int64_t max) {
  const json& v = member(j, key, where);
  // Unsigned when parsed from a file, signed when built in memory: both are range-checked.
  const bool fits = v.is_number_unsigned() ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max)
                    : v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= max;
  if (!fits)
    throw InputError(fmt::format("{}: \"{}\" is {}; it must be an integer from 0 to {}", where, key, json_excerpt(v), max));
  return v.get<std::int64_t>();
}

// A mistyped optional field ("update_ss") would keep its default without a word.
void only_fields(const json& j, const std::vector<std::string>& fields, std::string_view where) {
  if (const auto unknown = unknown_field_of(j, fields)) throw InputError(fmt::format("{}: {}", where, *unknown));
}

// No device draws more (the device sections' own bound on power_w).
constexpr double kMaxPowerW = 1e6;

const json& list(const json& j, const char* key, std::string_view where) {
  const json& v = member(j, key, where);
  if (!v.is_array()) throw InputError(fmt::format("{}: \"{}\" must be a list", where, key));
  return v;
}

}  // namespace

json measured_nodes_to_json(const MeasuredNodes& m) {
  json nodes = json::array();
  for (const MeasuredNode& n : m.nodes)
    nodes.push_back({{"name", n.name},
                     {"op", n.op},
                     {"role", n.role},
                     {"shape", n.shape},
                     {"compute_time_s", n.compute_time_s},
                     {"spread_s", n.spread_s},
                     {"compute_energy_j", n.compute_energy_j}});
  json out = {{"graph", m.graph},
              {"batch_size", m.batch_size},
              {"node_count", m.nodes.size()},
              {"repeats", m.repeats},
              {"list", std::move(nodes)}};
  if (m.threads > 0) out["threads"] = m.threads;
  if (m.update_s > 0) out["update_s"] = m.update_s;
  return out;
}

MeasuredNodes measured_nodes_from_json(const json& j, std::string_view where) {
  const std::string at = fmt::format("{}: nodes", where);
  MeasuredNodes m;
  only_fields(j, {"graph", "batch_size", "node_count", "repeats", "threads", "update_s", "list"}, at);
  m.graph = text(j, "graph", at);
  m.batch_size = count(j, "batch_size", at, std::numeric_limits<int>::max());
  m.repeats = static_cast<int>(count(j, "repeats", at, std::numeric_limits<int>::max()));
  if (m.batch_size < 1 || m.repeats < 1)
    throw InputError(fmt::format("{}: \"{}\" is 0; a profile measures at least one", at,
                                 m.batch_size < 1 ? "batch_size" : "repeats"));
  if (j.contains("threads")) m.threads = static_cast<int>(count(j, "threads", at, kMaxThreads));
  if (j.contains("update_s")) m.update_s = seconds_or_joules(j, "update_s", at);
  const std::int64_t declared = count(j, "node_count", at, static_cast<std::int64_t>(kMaxNodes));
  const json& entries = list(j, "list", at);
  if (static_cast<std::int64_t>(entries.size()) != declared)
    throw InputError(fmt::format("{}: node_count is {} but the list has {} entries; the file is truncated or edited, "
                                 "re-profile with `poet profile`",
                                 at, declared, entries.size()));
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string entry = fmt::format("{}.list[{}]", at, i);
    const json& e = entries[i];
    only_fields(e, {"name", "op", "role", "shape", "compute_time_s", "spread_s", "compute_energy_j"}, entry);
    MeasuredNode n;
    n.name = text(e, "name", entry);
    n.op = text(e, "op", entry);
    n.role = text(e, "role", entry);
    const json& shape = list(e, "shape", entry);
    for (const json& d : shape) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > kMaxTensorBytes ||
          (d.is_number_unsigned() && d.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxTensorBytes)))
        throw InputError(fmt::format("{}: shape holds {}; it must list integers from 0 to {}", entry, json_excerpt(d),
                                     kMaxTensorBytes));
      n.shape.push_back(d.get<std::int64_t>());
    }
    n.compute_time_s = seconds_or_joules(e, "compute_time_s", entry);
    n.spread_s = seconds_or_joules(e, "spread_s", entry);
    n.compute_energy_j = seconds_or_joules(e, "compute_energy_j", entry);
    if (n.compute_energy_j > kMaxPowerW * n.compute_time_s)
      throw InputError(fmt::format("{}: \"compute_energy_j\" {:g} J in \"compute_time_s\" {:g} s is more than {:g} W; "
                                   "re-profile with `poet profile`",
                                   entry, n.compute_energy_j, n.compute_time_s, kMaxPowerW));
    m.nodes.push_back(std::move(n));
  }
  return m;
}

json measured_storage_to_json(const MeasuredStorage& m) {
  json samples = json::array();
  for (const StorageSample& s : m.samples)
    samples.push_back({{"bytes", s.bytes},
                       {"pageout_s", s.pageout_s},
                       {"pageout_spread_s", s.pageout_spread_s},
                       {"pagein_s", s.pagein_s},
                       {"pagein_spread_s", s.pagein_spread_s},
                       {"compute_lost_s", s.compute_lost_s}});
  return {{"path", m.path}, {"direct_io", m.direct_io}, {"samples", std::move(samples)}};
}

MeasuredStorage measured_storage_from_json(const json& j, std::string_view where) {
  const std::string at = fmt::format("{}: storage_samples", where);
  MeasuredStorage m;
  only_fields(j, {"path", "direct_io", "samples"}, at);
  m.path = text(j, "path", at);
  const json& direct = member(j, "direct_io", at);
  if (!direct.is_boolean()) throw InputError(fmt::format("{}: \"direct_io\" must be true or false", at));
  m.direct_io = direct.get<bool>();
  const json& samples = list(j, "samples", at);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const std::string entry = fmt::format("{}.samples[{}]", at, i);
    only_fields(samples[i],
                {"bytes", "pageout_s", "pageout_spread_s", "pagein_s", "pagein_spread_s", "compute_lost_s"}, entry);
    StorageSample s;
    s.bytes = count(samples[i], "bytes", entry, kMaxTensorBytes);
    s.pageout_s = seconds_or_joules(samples[i], "pageout_s", entry);
    s.pageout_spread_s = seconds_or_joules(samples[i], "pageout_spread_s", entry);
    s.pagein_s = seconds_or_joules(samples[i], "pagein_s", entry);
    s.pagein_spread_s = seconds_or_joules(samples[i], "pagein_spread_s", entry);
    if (samples[i].contains("compute_lost_s")) s.compute_lost_s = seconds_or_joules(samples[i], "compute_lost_s", entry);
    m.samples.push_back(s);
  }
  return m;
}

}  // namespace poet
