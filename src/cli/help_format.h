// How `--help` shows an option's value: by what it is ("FILE", "a whole number from 1 to
// 1,048,576", "autodiff|chain"), with its default in words, not CLI11's "TEXT:FILE=...".
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace poet::cli {

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override;
};

}  // namespace poet::cli
