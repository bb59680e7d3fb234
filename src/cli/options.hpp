// The kreplay command line: kreplay [options] -- app [args]
//
// parse_command_line() turns argv into CliOptions and checks everything that argv alone decides
// (option spelling, values, conflicts, a missing application). Input files (-i) are read by
// make_run_plan() (plan.hpp), which also merges them with these options.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/settings.hpp"
#include "common/status.hpp"

namespace kreplay::cli {

struct CliOptions {
  /// Options shared with input-file jobs; each is set only when given on the command line.
  RunSettings settings;
  /// --pmc groups, one per flag, in order.
  std::vector<std::vector<std::string>> pmc;
  /// -i/--input FILE.
  std::optional<std::string> input_file;
  /// Per-pass services (--timing-pass, --pc-sampling, --sass-metrics / --source-counters,
  /// --pm-sampling), one PassSpec each in that order, with --<service>-pass-position as
  /// after_counters; make_run_plan places them (services_plan.hpp).
  std::vector<config::PassSpec> service_passes;
  config::ServiceOptions services;
  /// --kernel-replay-beta-enabled was given (accepted and ignored, as rocprofv3 requires it).
  bool kernel_replay_beta_enabled = false;
  /// --ranks 0,3: profile only these ranks of an MPI or torchrun job (ToolConfig::ranks).
  std::vector<int64_t> ranks;

  bool list_avail = false;             ///< --list-avail: list counters and exit
  bool list_sets = false;              ///< --list-sets: list the sets of sections and exit
  bool list_sections = false;          ///< --list-sections: list the sections and exit
  /// kreplay's own section folder; "" means report::default_sections_folder() (next to the
  /// executable). Not an option: tests set it.
  std::string sections_folder;
  std::vector<std::string> pmc_check;  ///< --pmc-check C...: check that they fit one pass
  std::optional<std::string> chip;     ///< --chip NAME for the two above (no GPU needed)

  bool quiet = false;         ///< -q/--quiet (settings.log_level is then "quiet")
  bool show_version = false;  ///< --version: print version_text() and exit 0
  bool show_help = false;     ///< -h/--help: print help_text and exit 0
  std::string help_text;      ///< filled when show_help is set

  /// The application and its arguments: everything after the first "--".
  std::vector<std::string> command;
};

/// Parse argv (argv[0] is the program name and is skipped). Errors are one line each, with
/// KREPLAY_STATUS_ERROR_INVALID_ARGUMENT: unknown options (with "did you mean"), bad values,
/// conflicting options, arguments before "--" that are not options, and a missing application
/// when the command needs one. --help and --version succeed with the flag set, whatever else
/// is on the line.
Result<CliOptions> parse_command_line(int argc, const char* const* argv);

/// Same, from a vector (argv[0] included).
Result<CliOptions> parse_command_line(const std::vector<std::string>& args);

/// The full --help text.
std::string help_text();

/// "kreplay 0.1.0".
std::string version_text();

}  // namespace kreplay::cli
