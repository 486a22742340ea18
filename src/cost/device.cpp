#include "poet/cost/device.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "poet/util/atomic_file.h"
#include "poet/util/error.h"
#include "poet/util/input_file.h"
#include "poet/util/json_file.h"
#include "poet/util/quoting.h"

namespace poet {
namespace {

using nlohmann::json;

// Every figure of a profile: its JSON path, its member and its range. The ranges hold every
// real device by orders of magnitude (an MCU computes 1.7e5 FLOP/s, a GPU 1e14) and keep every
// cost the model derives finite: a rate of at least 1 divides at most 2^48 bytes or 1e21 FLOP.
struct Field {
  const char* section;
  const char* key;
  double DeviceProfile::*member;
  double min, max;  // a rate's min is > 0: the cost model divides by it
  const char* unit;
  bool optional = false;  // absent from a file: the member keeps its default
};

constexpr double kMinRate = 1, kMaxRate = 1e18, kMaxLatency = 1e3, kMaxPower = 1e6;

constexpr Field kFields[] = {
    {"compute", "flops_per_second", &DeviceProfile::flops_per_second, kMinRate, kMaxRate, "FLOP per second"},
    {"compute", "flops_per_joule", &DeviceProfile::flops_per_joule, kMinRate, kMaxRate, "FLOP per joule"},
    {"compute", "power_w", &DeviceProfile::compute_power_w, 0, kMaxPower, "watts"},
    {"storage", "pagein_latency_s", &DeviceProfile::pagein_latency_s, 0, kMaxLatency, "seconds"},
    {"storage", "pagein_bytes_per_s", &DeviceProfile::pagein_bytes_per_s, kMinRate, kMaxRate, "bytes per second"},
    {"storage", "pageout_latency_s", &DeviceProfile::pageout_latency_s, 0, kMaxLatency, "seconds"},
    {"storage", "pageout_bytes_per_s", &DeviceProfile::pageout_bytes_per_s, kMinRate, kMaxRate, "bytes per second"},
    {"storage", "power_w", &DeviceProfile::memory_power_w, 0, kMaxPower, "watts"},
    {"storage", "cpu_per_transfer_s", &DeviceProfile::paging_cpu_per_transfer_s, 0, kMaxLatency, "seconds", true},
    {"storage", "cpu_per_byte_s", &DeviceProfile::paging_cpu_per_byte_s, 0, kMaxLatency, "seconds", true},
    {"storage", "charge_scale", &DeviceProfile::paging_charge_scale, 0, kMaxPagingChargeScale, "times cpu_per_transfer_s and cpu_per_byte_s", true},
};

void check_value(double v, const Field& f, std::string_view where) {
  if (!(v >= f.min && v <= f.max)) {
    if (f.min > 0 && v == 0)  // the message the common mistake deserves
      throw InputError(fmt::format("{}: {}.{} is 0; it must be a positive number of {}", where, f.section, f.key, f.unit));
    throw InputError(fmt::format("{}: {}.{} is {}; it must be a number of {} from {:g} to {:g}", where, f.section, f.key,
                                 v, f.unit, f.min, f.max));
  }
}

// A hand edit's mistyped field is refused, not dropped: an optional one would silently keep
// its default (storage.cpu_per_bytes_s for cpu_per_byte_s made paging free).
void refuse_unknown_fields(const json& object, const std::vector<std::string>& fields, const std::string& where) {
  if (const auto unknown = unknown_field_of(object, fields)) throw InputError(fmt::format("{}: {}", where, *unknown));
}

std::vector<std::string> section_fields(std::string_view section) {
  std::vector<std::string> keys;
  for (const auto& f : kFields)
    if (f.section == section) keys.push_back(f.key);
  return keys;
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
  if (j.is_array() && !j.empty() && j[0].is_object() && j[0].contains("format"))
    throw InputError(fmt::format("{}: a list of {} profiles (as `poet platforms --json` prints them); a profile "
                                 "file holds one: save one element of the list in a file of its own, or give a "
                                 "built-in platform's name",
                                 where, j.size()));
  if (!j.is_object() || !j.contains("format") || j["format"] != "poet-device")
    throw InputError(fmt::format("{}: not a poet device profile (expected \"format\": \"poet-device\"; see "
                                 "docs/FORMATS.md)",
                                 where));
  if (const auto problem = version_problem(j, 1)) throw InputError(fmt::format("{}: {}", where, *problem));
  refuse_unknown_fields(j, {"format", "version", "name", "description", "compute", "storage", "sources",
                            "measured_on", "method", "nodes", "storage_samples"},
                        where);
  for (const char* section : {"compute", "storage"}) {
    if (!j.contains(section)) continue;
    if (!j[section].is_object())
      throw InputError(fmt::format("{}: \"{}\" is {}; it must be an object of the fields {}", where, section,
                                   json_excerpt(j[section]), fmt::join(section_fields(section), ", ")));
    refuse_unknown_fields(j[section], section_fields(section), fmt::format("{}: \"{}\"", where, section));
  }
  DeviceProfile d;
  if (!j.contains("name")) throw InputError(fmt::format("{}: missing \"name\" (a string)", where));
  if (!j["name"].is_string() || j["name"].get<std::string>().empty())
    throw InputError(fmt::format("{}: \"name\" is {}; it must be a non-empty string", where, json_excerpt(j["name"])));
  // Texts on one line (util/quoting.h): a profile may come from anywhere, and they are printed.
  d.name = one_line(j["name"].get<std::string>());
  const auto optional_text = [&](const char* key) {
    if (!j.contains(key)) return std::string();
    if (!j[key].is_string())
      throw InputError(fmt::format("{}: \"{}\" must be a string, not {}", where, key, json_excerpt(j[key])));
    return one_line(j[key].get<std::string>());
  };
  d.description = optional_text("description");
  d.sources = optional_text("sources");
  for (const auto& f : kFields) {
    const bool present = j.contains(f.section) && j[f.section].is_object() && j[f.section].contains(f.key);
    if (!present && f.optional) continue;
    if (!present)
      throw InputError(fmt::format("{}: missing {}.{} ({})", where, f.section, f.key, f.unit));
    const json& v = j[f.section][f.key];
    if (!v.is_number())
      throw InputError(fmt::format("{}: {}.{} is {}; it must be a number of {}", where, f.section, f.key,
                                   json_excerpt(v), f.unit));
    d.*f.member = v.get<double>();
    check_value(d.*f.member, f, where);
  }
  d.measured_on = optional_text("measured_on");
  d.method = optional_text("method");
  if (j.contains("nodes")) d.nodes = measured_nodes_from_json(j["nodes"], where);
  if (j.contains("storage_samples")) d.storage = measured_storage_from_json(j["storage_samples"], where);
  return d;
}

DeviceProfile load_device(const std::string& path) {
  const json j = read_json_file(path, "device profile");
  return convert_json("device profile", path, [&] { return device_from_json(j, path); });
}

void save_device(const DeviceProfile& device, const std::string& path) {
  device.validate();
  write_file_atomically(path, json_text(device_to_json(device), 2) + "\n");
}

DeviceProfile resolve_device(const std::string& name_or_path) {
  for (const auto& d : builtin_platforms())
    if (d.name == name_or_path) return d;
  std::error_code error;
  if (std::filesystem::exists(name_or_path, error)) return load_device(name_or_path);
  if (error && error != std::errc::no_such_file_or_directory)
    throw InputError(fmt::format("device profile '{}': {}", name_or_path, unreadable_path_text(error)));
  std::string names;
  for (const auto& d : builtin_platforms()) names += (names.empty() ? "" : ", ") + d.name;
  // A path was meant: say the file is missing rather than that no platform has that name.
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json"))
    throw InputError(fmt::format("device profile '{}' does not exist; give the path of a profile file (poet profile "
                                 "writes one), or a built-in platform: {}",
                                 name_or_path, names));
  throw InputError(fmt::format("unknown platform '{}': expected one of {}, or a path to a device profile JSON file",
                               name_or_path, names));
}

}  // namespace poet
