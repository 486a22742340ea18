// Reading JSON files with errors a user can act on.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace poet {

// Parses the file at `path`. Throws InputError naming `what` ("graph", "schedule", ...),
// the path, and for a syntax error the line and column.
nlohmann::json read_json_file(const std::string& path, std::string_view what);

}  // namespace poet
