#include "parse_errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <regex>
#include <vector>

#include "poet/util/nearest_name.h"
#include "poet/util/quoting.h"

namespace poet::cli {
namespace {

std::vector<std::string> subcommand_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

// "'sovle' is not a poet command (did you mean 'solve'?)"
std::string unknown_command(const CLI::App* app, const std::string& word) {
  if (word.starts_with('-')) return fmt::format("'{}' is not an option of poet", word);
  std::string text = fmt::format("'{}' is not a poet command", word);
  if (const auto nearest = nearest_name(word, subcommand_names(app))) text += fmt::format(" (did you mean '{}'?)", *nearest);
  return text;
}

// The options of `command` a mistyped `word` ("--budget", "--ram-buget") may have meant:
// those a typo or two away, else those with `word` as a part or the start of their name
// ("--ram-budget", "--time-limit" for "--tim").
std::vector<std::string> nearby_options(const CLI::App* command, std::string word) {
  word = word.substr(word.find_first_not_of('-'));
  word = word.substr(0, word.find('='));
  const std::size_t typos_allowed = word.size() >= 5 ? 2 : 1;
  std::vector<std::string> typos, parts;
  for (const CLI::Option* option : command->get_options())
    for (const std::string& name : option->get_lnames()) {
      if (edit_distance(word, name) <= typos_allowed) typos.push_back("--" + name);
      const bool a_part = ("-" + name + "-").find("-" + word + "-") != std::string::npos;
      if (a_part || (word.size() >= 3 && name.starts_with(word))) parts.push_back("--" + name);
    }
  return typos.empty() ? parts : typos;
}

// Words left over: unknown options, or values that follow no option.
std::string unknown_arguments(const CLI::App* command, const std::string& where) {
  const std::vector<std::string> words = command->remaining();
  std::vector<std::string> options;
  std::ranges::copy_if(words, std::back_inserter(options),
                       [](const std::string& w) { return w.size() > 1 && w.starts_with('-'); });
  if (options.empty())  // e.g. "poet solve resnet18"; CLI11's own text lists the words last first
    return fmt::format("'{}' follows no option of {}; a value goes after its option (--name value)",
                       fmt::join(words, " "), where);
  if (options.size() > 1) return fmt::format("'{}' are not options of {}", fmt::join(options, "', '"), where);
  std::string text = fmt::format("'{}' is not an option of {}", options.front(), where);
  const std::vector<std::string> near = nearby_options(command, options.front());
  if (!near.empty() && near.size() <= 3) text += fmt::format(" (did you mean '{}'?)", fmt::join(near, "' or '"));
  return text;
}

}  // namespace

std::string parse_error_message(const CLI::App* app, const CLI::Error& e) {
  const std::string what = e.what();
  // The command whose options were being read, for its --help.
  const CLI::App* command = app;
  while (!command->get_subcommands().empty()) command = command->get_subcommands().front();
  const std::string help = command == app ? "poet --help" : fmt::format("poet {} --help", command->get_name());
  std::string text = what;
  std::smatch m;
  if (what == "A subcommand is required") {
    const std::vector<std::string> words = app->remaining();
    text = fmt::format("{}; the commands are {}", words.empty() ? "give a command" : unknown_command(app, words.front()),
                       fmt::join(subcommand_names(app), ", "));
  } else if (std::regex_match(what, m, std::regex(R"((.+): At Most 1 required but received (\d+))"))) {
    text = fmt::format("{} was given {} times; give it once", m.str(1), m.str(2));
  } else if (std::regex_match(what, m, std::regex(R"((.+): \d+ required (\S+) missing)"))) {
    text = fmt::format("{} needs a value ({})", m.str(1), m.str(2));
  } else if (std::regex_match(what, m, std::regex(R"((\S+) excludes (\S+))"))) {
    text = fmt::format("{} and {} cannot be given together: give one of them", m.str(1), m.str(2));
  } else if (std::regex_match(what, m, std::regex(R"((\S+) requires (\S+))"))) {
    text = fmt::format("{} needs {}: give it too", m.str(1), m.str(2));
  } else if (std::regex_match(what, m, std::regex(R"(Could not convert: (\S+) = (.*))"))) {
    // A value the validator took as a number but CLI11 could not read as the option's type
    // ("1e5" for a whole number).
    text = fmt::format("{}: '{}' is not a number this option reads; write it in digits (100000, not 1e5)", m.str(1),
                       m.str(2));
  } else if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    text = unknown_arguments(command, command == app ? std::string("poet") : "poet " + command->get_name());
  }
  return fmt::format("poet: error: {}\nRun '{}' for the options.\n", one_line(text), help);
}

}  // namespace poet::cli
