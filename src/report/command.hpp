// The commands on a results database, `kreplay report RUN.db ...`, `kreplay convert RUN.db ...`
// and `kreplay merge DIR|FILES... -o all.db` (main() hands them argv from the subcommand on).
// Errors are one "==KREPLAY== error:" line naming the problem and the fix, with exit status 2.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.hpp"
#include "report/convert.hpp"
#include "report/model.hpp"

namespace kreplay::report {

struct ReportCommand {
  std::string database;
  std::string baseline;
  std::string format = "text";  ///< text, csv, json, html
  std::string output;           ///< "" = stdout (html: <stem>_report.html next to the database)
  std::vector<std::string> section_folders;  ///< --section-folder, after kreplay's own
  ReportOptions options;
  bool help = false;
  std::string help_text;
};

/// Parse `report ARGS` (@p args[0] is "report").
Result<ReportCommand> parse_report_command(const std::vector<std::string>& args);

/// Parse `convert ARGS` (@p args[0] is "convert"); ConvertOptions::database empty with help set.
Result<ConvertOptions> parse_convert_command(const std::vector<std::string>& args, bool* help,
                                             std::string* help_text);

struct MergeCommand {
  std::vector<std::string> inputs;  ///< the databases, directories expanded (sorted)
  std::string output;
  bool help = false;
  std::string help_text;
};

/// Parse `merge DIR|FILES... [-o FILE]` (@p args[0] is "merge"): a directory stands for every
/// *_results.db under it.
Result<MergeCommand> parse_merge_command(const std::vector<std::string>& args);

/// Run `report`, `convert` or `merge` (argv[0] names which); the exit status.
int run_command(int argc, char** argv);

/// Where `--format html` writes without -o: next to the database, <stem>_report.html.
std::string default_html_path(const std::string& database);

}  // namespace kreplay::report
