#include "poet/schedule/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "poet/util/error.h"
#include "poet/util/json_file.h"
#include "poet/util/quoting.h"

namespace poet {

bool SparseMatrix::get(std::size_t t, NodeId i) const {
  const auto& r = rows_.at(t);
  return std::binary_search(r.begin(), r.end(), i);
}

void SparseMatrix::set_in_place(SparseRow& r, NodeId i, bool value) {
  const auto it = std::lower_bound(r.begin(), r.end(), i);
  const bool present = it != r.end() && *it == i;
  if (value && !present) r.insert(it, i);
  if (!value && present) r.erase(it);
}

std::size_t SparseMatrix::count() const {
  std::size_t n = 0;
  for (const auto& r : rows_) n += r.size();
  return n;
}

namespace {

struct NamedMatrix {
  const char* name;
  SparseMatrix Schedule::*matrix;
};

constexpr NamedMatrix kMatrices[] = {{"R", &Schedule::R},
                                     {"S_ram", &Schedule::S_ram},
                                     {"S_aux", &Schedule::S_aux},
                                     {"M_in", &Schedule::M_in},
                                     {"M_out", &Schedule::M_out}};

}  // namespace

void check_schedule_shape(const Schedule& s, const Graph& g) {
  if (s.stages != g.size())
    throw InputError(fmt::format("schedule has {} stages but graph '{}' has {} nodes; a schedule belongs to "
                                 "the graph it was made for",
                                 s.stages, g.name(), g.size()));
  for (const auto& m : kMatrices) {
    const SparseMatrix& mat = s.*m.matrix;
    if (mat.stages() != s.stages)
      throw InputError(fmt::format("schedule matrix {} has {} rows; expected {}", m.name, mat.stages(), s.stages));
    for (std::size_t t = 0; t < s.stages; ++t) {
      const SparseRow& row = mat.row(t);
      if (row.empty()) continue;
      // Ascending (set() keeps rows so): the ends bound every entry. Planning checks every
      // schedule, and Capuchin plans thousands.
      for (const NodeId i : {row.front(), row.back()})
        if (i < 0 || static_cast<std::size_t>(i) > t)
          throw InputError(fmt::format("schedule matrix {}[{}][{}] is set, but node {} cannot be touched before "
                                       "its own stage (matrices are lower-triangular)",
                                       m.name, t, i, i));
    }
  }
  for (std::size_t t = 0; t < s.stages; ++t)
    if (s.R.row(t).empty() || s.R.row(t).back() != static_cast<NodeId>(t))  // the largest entry: see above
      throw InputError(fmt::format("schedule R[{}][{}] is 0: stage {} must compute node '{}'", t, t, t,
                                   g.node(static_cast<NodeId>(t)).name));
}

nlohmann::json schedule_to_json(const Schedule& s) {
  nlohmann::json j = {{"format", "poet-schedule"}, {"version", 1}, {"method", s.method}, {"stages", s.stages}};
  for (const auto& m : kMatrices) {
    const SparseMatrix& mat = s.*m.matrix;
    auto rows = nlohmann::json::array();
    for (std::size_t t = 0; t < mat.stages(); ++t) rows.push_back(mat.row(t));
    j[m.name] = std::move(rows);
  }
  return j;
}

Schedule schedule_from_json(const nlohmann::json& j, std::string_view origin) {
  const auto bad = [&](const std::string& what) {
    return InputError(fmt::format("schedule '{}': {}", origin, what));
  };
  if (!j.is_object() || !j.contains("format") || j["format"] != "poet-schedule")
    throw bad("not a poet schedule (expected \"format\": \"poet-schedule\")");
  if (const auto problem = version_problem(j, 1)) throw bad(*problem);
  // A mistyped field ("M_outt") would be dropped, and the matrix it meant read as missing or
  // another's; so is a "graph" that does not say which graph, whose check would be skipped.
  static const std::vector<std::string> kFields = {"format", "version", "method", "stages", "graph",
                                                   "R",      "S_ram",   "S_aux",  "M_in",   "M_out"};
  if (const auto unknown = unknown_field_of(j, kFields)) throw bad(*unknown);
  if (j.contains("graph")) {
    const nlohmann::json& graph = j["graph"];
    const bool named = graph.is_object() && graph.size() == 2 && graph.contains("name") && graph["name"].is_string() &&
                       graph.contains("structure") && graph["structure"].is_string();
    if (!named)
      throw bad(fmt::format("\"graph\" is {}; it is {{\"name\": ..., \"structure\": ...}}, two strings, as poet "
                            "writes it (or leave it out)",
                            json_excerpt(graph)));
  }
  if (!j.contains("stages")) throw bad("missing \"stages\" (a count)");
  if (!j["stages"].is_number_unsigned())
    throw bad(fmt::format("\"stages\" must be a count, not {}", json_excerpt(j["stages"])));
  if (j.contains("method") && !j["method"].is_string())
    throw bad(fmt::format("\"method\" must be a string, not {}", json_excerpt(j["method"])));
  const auto stages = j["stages"].get<std::uint64_t>();
  // Every matrix must have one row per stage: checked before anything is allocated, so the
  // size of what is built is bounded by the file's own size, not by a number in it.
  for (const auto& m : kMatrices) {
    if (!j.contains(m.name) || !j[m.name].is_array())
      throw bad(fmt::format("missing matrix \"{}\" (one array of node ids per stage)", m.name));
    if (j[m.name].size() != stages)
      throw bad(fmt::format("matrix {} has {} rows; \"stages\" says {}", m.name, j[m.name].size(), stages));
  }
  Schedule s(static_cast<std::size_t>(stages), j.contains("method") ? j["method"].get<std::string>() : "");
  for (const auto& m : kMatrices) {
    const auto& rows = j[m.name];
    for (std::size_t t = 0; t < s.stages; ++t) {
      if (!rows[t].is_array()) throw bad(fmt::format("{}[{}] is {}, not an array of node ids", m.name, t, json_excerpt(rows[t])));
      // Lower-triangular: row t holds ids up to t (check_schedule_shape says why).
      std::vector<NodeId> ids;
      for (const auto& v : rows[t]) {
        const bool in_range = v.is_number_unsigned() ? v.get<std::uint64_t>() <= t
                              : v.is_number_integer() && v.get<std::int64_t>() >= 0 &&
                                    static_cast<std::uint64_t>(v.get<std::int64_t>()) <= t;
        if (!in_range)
          throw bad(fmt::format("{}[{}] holds {}, which is not a node id in [0, {}]; node i cannot be touched before "
                                "its own stage (matrices are lower-triangular)",
                                m.name, t, json_excerpt(v), t));
        ids.push_back(v.get<NodeId>());
      }
      std::sort(ids.begin(), ids.end());  // ascending: each set() appends
      for (const NodeId i : ids) (s.*m.matrix).set(t, i);
    }
  }
  return s;
}

namespace {

// The graph a schedule file says it was made for ("graph"; older files have none), for
// messages; empty for older files.
std::string made_for(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("graph") || !j["graph"].is_object()) return "";
  const auto& name = j["graph"].value("name", nlohmann::json());
  return name.is_string() ? fmt::format(" (it was made for '{}')", one_line(name.get<std::string>())) : "";
}

}  // namespace

Schedule load_schedule(const std::string& path, const Graph& g) {
  const nlohmann::json j = [&] {
    try {
      return read_json_file(path, "schedule");
    } catch (const InputError& e) {
      // A plan's text (poet plan -o), given here by mistake, is named with where it goes.
      std::string start(16, '\0');
      std::ifstream(path, std::ios::binary).read(start.data(), static_cast<std::streamsize>(start.size()));
      for (const char* word : {"# poet plan", "compute ", "pageout ", "pagein ", "free "})
        if (start.starts_with(word)) throw InputError(fmt::format("{}; it is a plan's text: give it to --plan", e.what()));
      throw;
    }
  }();
  const std::string refit = fmt::format("make one for '{}' (poet solve or poet plan with --save-schedule), or give the "
                                        "graph the schedule was made for",
                                        g.name());
  // The graph says how large the schedule can be, before the file's rows are allocated.
  if (j.is_object() && j.contains("stages") && j["stages"].is_number_unsigned() && j["stages"].get<std::uint64_t>() != g.size())
    throw InputError(fmt::format("schedule '{}' has {} stages but graph '{}' has {} nodes{}: {}", path,
                                 j["stages"].get<std::uint64_t>(), g.name(), g.size(), made_for(j), refit));
  // Same size is not same graph: another network of as many nodes would be simulated with
  // this one's decisions, and fail at a confusing instruction or, worse, pass.
  if (j.is_object() && j.contains("graph") && j["graph"].is_object()) {
    const auto& structure = j["graph"].value("structure", nlohmann::json());
    if (structure.is_string() && structure.get<std::string>() != g.structure_checksum_text())
      throw InputError(fmt::format("schedule '{}' is for another graph than '{}'{}: they have as many nodes, but "
                                   "other operators or edges; {}",
                                   path, g.name(), made_for(j), refit));
  }
  Schedule s = convert_json("schedule", path, [&] { return schedule_from_json(j, path); });
  try {
    check_schedule_shape(s, g);
  } catch (const InputError& e) {
    throw InputError(fmt::format("'{}': {}", path, e.what()));
  }
  return s;
}

std::string schedule_file_text(const Schedule& s, const Graph& g) {
  nlohmann::json j = schedule_to_json(s);
  j["graph"] = {{"name", g.name()}, {"structure", g.structure_checksum_text()}};
  return json_text(j) + "\n";
}

}  // namespace poet
