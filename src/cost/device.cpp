#include "poet/cost/device.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "poet/util/atomic_file.h"
#include "poet/util/error.h"
#include "poet/util/json_file.h"

namespace poet {
namespace {

using nlohmann::json;

// Every figure of a profile: its JSON path, its member, and whether zero is allowed.
struct Field {
  const char* section;
  const char* key;
  double DeviceProfile::*member;
  bool positive;  // a rate: must be > 0 (the cost model divides by it)
  const char* unit;
};

constexpr Field kFields[] = {
    {"compute", "flops_per_second", &DeviceProfile::flops_per_second, true, "FLOP per second"},
    {"compute", "flops_per_joule", &DeviceProfile::flops_per_joule, true, "FLOP per joule"},
    {"compute", "power_w", &DeviceProfile::compute_power_w, false, "watts"},
    {"storage", "pagein_latency_s", &DeviceProfile::pagein_latency_s, false, "seconds"},
    {"storage", "pagein_bytes_per_s", &DeviceProfile::pagein_bytes_per_s, true, "bytes per second"},
    {"storage", "pageout_latency_s", &DeviceProfile::pageout_latency_s, false, "seconds"},
    {"storage", "pageout_bytes_per_s", &DeviceProfile::pageout_bytes_per_s, true, "bytes per second"},
    {"storage", "power_w", &DeviceProfile::memory_power_w, false, "watts"},
};

void check_value(double v, const Field& f, std::string_view where) {
  if (!std::isfinite(v) || v < 0 || (f.positive && v == 0))
    throw InputError(fmt::format("{}: {}.{} is {}; it must be a {} number of {}", where, f.section, f.key, v,
                                 f.positive ? "positive" : "non-negative", f.unit));
}

}  // namespace

void DeviceProfile::validate() const {
  const std::string where = fmt::format("profile '{}'", name);
  if (name.empty()) throw InputError("device profile has no name");
  for (const auto& f : kFields) check_value(this->*f.member, f, where);
}

json device_to_json(const DeviceProfile& d) {
  json j = {{"format", "poet-device"}, {"version", 1}, {"name", d.name}, {"description", d.description}};
  for (const auto& f : kFields) j[f.section][f.key] = d.*f.member;
  j["sources"] = d.sources;
  if (!d.measured_on.empty()) j["measured_on"] = d.measured_on;
  if (!d.method.empty()) j["method"] = d.method;
  if (d.nodes) j["nodes"] = measured_nodes_to_json(*d.nodes);
  if (d.storage) j["storage_samples"] = measured_storage_to_json(*d.storage);
  return j;
}

DeviceProfile device_from_json(const json& j, std::string_view origin) {
  const std::string where = fmt::format("profile '{}'", origin);
  if (!j.is_object() || j.value("format", "") != "poet-device")
    throw InputError(fmt::format("{}: not a poet device profile (expected \"format\": \"poet-device\"; see "
                                 "docs/FORMATS.md)",
                                 where));
  if (j.value("version", 0) != 1) throw InputError(fmt::format("{}: unsupported version; this poet reads version 1", where));
  DeviceProfile d;
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
    throw InputError(fmt::format("{}: missing \"name\" (a string)", where));
  d.name = j["name"].get<std::string>();
  d.description = j.value("description", "");
  d.sources = j.value("sources", "");
  for (const auto& f : kFields) {
    if (!j.contains(f.section) || !j[f.section].is_object() || !j[f.section].contains(f.key))
      throw InputError(fmt::format("{}: missing {}.{} ({})", where, f.section, f.key, f.unit));
    const json& v = j[f.section][f.key];
    if (!v.is_number())
      throw InputError(fmt::format("{}: {}.{} is {}; it must be a number of {}", where, f.section, f.key, v.dump(),
                                   f.unit));
    d.*f.member = v.get<double>();
    check_value(d.*f.member, f, where);
  }
  d.measured_on = j.value("measured_on", "");
  d.method = j.value("method", "");
  if (j.contains("nodes")) d.nodes = measured_nodes_from_json(j["nodes"], where);
  if (j.contains("storage_samples")) d.storage = measured_storage_from_json(j["storage_samples"], where);
  return d;
}

DeviceProfile load_device(const std::string& path) {
  return device_from_json(read_json_file(path, "device profile"), path);
}

void save_device(const DeviceProfile& device, const std::string& path) {
  device.validate();
  write_file_atomically(path, device_to_json(device).dump(2) + "\n");
}

DeviceProfile resolve_device(const std::string& name_or_path) {
  for (const auto& d : builtin_platforms())
    if (d.name == name_or_path) return d;
  if (std::filesystem::exists(name_or_path)) return load_device(name_or_path);
  std::string names;
  for (const auto& d : builtin_platforms()) names += (names.empty() ? "" : ", ") + d.name;
  throw InputError(fmt::format("unknown platform '{}': expected one of {}, or a path to a device profile JSON file",
                               name_or_path, names));
}

}  // namespace poet
