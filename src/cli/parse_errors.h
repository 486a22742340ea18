// What CLI11 refuses while parsing, said in poet's words: `poet sovle` was answered "A
// subcommand is required" (as if no command had been given), and an option given twice "At
// Most 1 required but received 2".
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace poet::cli {

// The message for a parse error `e` of `app` (poet's top-level App), with the --help to
// read: for App::failure_message.
std::string parse_error_message(const CLI::App* app, const CLI::Error& e);

}  // namespace poet::cli
