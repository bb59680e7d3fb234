// Reading a command line's words against a CLI11 app, for the checks that CLI11 does not make
// (an option never takes another option as its value): the main command (cli/options.cpp) and
// `kreplay report` / `kreplay convert` (report/command.cpp). Header-only: CLI11 is.
#pragma once

#include <CLI/CLI.hpp>
#include <cctype>
#include <string>

namespace kreplay::cli {

/// The option of @p app that @p word names ("--chip", "--chip=GH100", "-k"), or nullptr.
inline const CLI::Option* option_of(const CLI::App& app, const std::string& word) {
  if (word.size() < 2 || word[0] != '-') return nullptr;
  const std::string name = word.substr(0, word.find('='));
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& n : opt->get_lnames()) {
      if (name == "--" + n) return opt;
    }
    for (const std::string& n : opt->get_snames()) {
      if (name == "-" + n) return opt;
    }
  }
  return nullptr;
}

/// A word that is written as an option: "-x", "--name", not a negative number or "-".
inline bool looks_like_option(const std::string& word) {
  if (word.size() < 2 || word[0] != '-') return false;
  const char c = word[1];
  return !(std::isdigit(static_cast<unsigned char>(c)) || c == '.');
}

}  // namespace kreplay::cli
