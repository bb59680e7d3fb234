// The run plan: which application runs the kreplay command makes, each with its ToolConfig.
//
// Rules (tests in plan_test.cpp pin each one):
//
// Command line only.
//   - One counter group (or none) and no --metrics: one run, no replay.
//   - More than one pass needed (several --pmc groups, or --metrics): --replay-mode kernel is the
//     default; one run whose passes are the groups in order.
//   - --replay-mode application with N groups: N runs, app_pass 1..N, outputs in
//     <dir>/pass_1 ... <dir>/pass_N. --metrics cannot use application replay (the device decides
//     how many passes they take).
//   - --replay-mode kernel or range needs counters (--pmc, --metrics, --set or --section).
//   - --set NAME / --section NAME|regex:EXPR (repeatable) collect the counters of those sections
//     (share/kreplay/sections, plus --section-folder), as --metrics do: kernel replay by default,
//     not application replay. With none of --pmc, --metrics, --set, --section, no input file and
//     no --replay-mode application, the set basic is collected and a note says so (--set none
//     turns it off). Sections that need data kreplay does not collect yet (SourceCounters) are
//     skipped, with a note when named with --section.
//
// Input file, job_replay_mode: application (the default). Every job is a run of its own, as in
// rocprofv3, including jobs without counters (a trace-only job or a timing_pass job is a run
// too; rocprofv3 silently dropped them). A job's counter groups may again need several runs.
// Command-line options apply to every job; an option that both the command line and a job give
// must have the same value. When the plan makes more than one run, run k writes into
// <its directory>/pass_k.
//
// Input file, job_replay_mode: kernel. The jobs are the passes of ONE run, in job order. A job
// selects exactly one pass service: pmc (a counter group) or timing_pass: true (a clean timing
// pass, counters locally stopped; its options are the timing_pass_* keys). Every other key is a
// run option: it may sit on any job, and the jobs that give it must agree. Rejected, each with its
// own message: a job with both services or neither; a second timing job; pmc_groups or metrics
// on a job; timing_pass_* on a counter job; no pmc job; replay_mode: application; --pmc or
// --metrics on the command line; a run option on which jobs (or a job and the command line)
// disagree.
//
// Rotation. pmc_groups (+ pmc_group_interval, default 1) on an application-mode job rotates the
// groups across launches without replay; it cannot be combined with --pmc, pmc, metrics or a
// kernel/range replay_mode.
//
// Filters and output names are checked here, so a bad regex, iteration range or template stops
// the command before the application starts. Booleans and every other option count as given only
// when the user wrote them (never a default).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/input_file.hpp"
#include "cli/options.hpp"
#include "common/status.hpp"
#include "config/tool_config.hpp"

namespace kreplay::cli {

/// What the command does.
enum class PlanAction {
  kRun,        ///< run the application once per PlannedRun, in order
  kListAvail,  ///< list the counters (of RunPlan::chip, or of the local GPU) and exit
  kPmcCheck,   ///< check that RunPlan::pmc_check fits one pass and exit
  kListSets,   ///< print the sets of RunPlan::section_folders and exit
  kListSections,  ///< print the sections of RunPlan::section_folders and exit
  kHelp,       ///< print RunPlan::help_text and exit 0
  kVersion,    ///< print version_text() and exit 0
};

/// One run of the application.
struct PlannedRun {
  /// The tool's configuration. config.output.directory already ends in /pass_<k> when the plan
  /// has more than one run; the command creates nothing itself (the tool expands the templates).
  config::ToolConfig config;
  /// "run 2 of 3 (jobs.yaml, job 2)": for the command's progress lines.
  std::string label;
};

struct RunPlan {
  PlanAction action = PlanAction::kRun;
  std::vector<PlannedRun> runs;        ///< kRun: at least one
  std::vector<std::string> command;    ///< kRun: the application and its arguments
  std::optional<std::string> chip;     ///< kListAvail / kPmcCheck / kListSets / kListSections
  std::vector<std::string> pmc_check;  ///< kPmcCheck
  std::string help_text;               ///< kHelp
  std::string log_level;  ///< -q / --log-level; "" when not given (environment or default)
  std::vector<std::string> warnings;  ///< one line each, for the command to print
  std::vector<std::string> notes;     ///< one line each, printed as plain status lines
  /// kListSets / kListSections: the section folders to list (kreplay's own, then
  /// --section-folder).
  std::vector<std::string> section_folders;
};

/// Read options.input_file (if any) and build the plan.
Result<RunPlan> make_run_plan(const CliOptions& options);

/// Build the plan from options and an already parsed input file (nullptr: none). The file's
/// path in @p options is not read again.
Result<RunPlan> make_run_plan(const CliOptions& options, const InputFile* input);

/// "<directory>/pass_<k>".
std::string pass_directory(const std::string& directory, size_t k);

}  // namespace kreplay::cli
