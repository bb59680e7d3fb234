// Input files (-i FILE): JSON or YAML, as rocprofv3 reads them.
//
//   { "job_replay_mode": "application" | "kernel",     (optional; default application)
//     "jobs": [ { "pmc": ["SQ_WAVES", "GRBM_COUNT"], "kernel_include_regex": "gemm" }, ... ] }
//
// The format is documented, key by key, in share/kreplay/input-schema.json; a unit test checks
// that the schema and kJobKeys / the enum name lists agree. Each job's keys are the command-line
// options in snake_case, plus the input-only keys pmc_groups, pmc_group_interval, timing_pass and
// timing_pass_*, and the per-pass services' keys (pc_sampling, sass_metrics, source_counters,
// pm_sampling and their settings; see plan.hpp for what a job means in each job_replay_mode).
//
// Errors are one line. Syntax errors are "file:line:column: message"; a bad key or value is
// "file:line:column: jobs[2].launch_skip: message" (YAML and JSON both give the position of the
// key).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/settings.hpp"
#include "common/status.hpp"

namespace kreplay::cli {

/// How the jobs of a file are run (top-level job_replay_mode).
enum class JobReplayMode {
  kApplication,  ///< each job is a run of the application of its own (default)
  kKernel,       ///< the jobs are the passes of one kernel-replay run, in job order
};

inline constexpr std::array<std::string_view, 2> kJobReplayModeNames = {"application", "kernel"};
std::string_view to_string(JobReplayMode mode);
std::optional<JobReplayMode> parse_job_replay_mode(std::string_view text);

/// Keys accepted at the top level of an input file. "$schema" lets editors find the schema.
inline constexpr std::array<std::string_view, 3> kTopLevelKeys = {"$schema", "job_replay_mode",
                                                                  "jobs"};

/// Keys accepted in a job, in the order the schema documents them.
inline constexpr std::array<std::string_view, 43> kJobKeys = {
    "pmc",
    "pmc_groups",
    "pmc_group_interval",
    "metrics",
    "set",
    "section",
    "section_folder",
    "timing_pass",
    "timing_pass_flush_cache",
    "pc_sampling",
    "pc_sampling_period",
    "sass_metrics",
    "source_counters",
    "pm_sampling",
    "pm_sampling_interval",
    "replay_mode",
    "range_markers",
    "replay_memory",
    "graph_profiling",
    "cache_control",
    "snapshot",
    "clock_control",
    "check_divergence",
    "kernel_replay_beta_enabled",
    "kernel_include_regex",
    "kernel_exclude_regex",
    "kernel_name",
    "kernel_iteration_range",
    "launch_skip",
    "launch_count",
    "nvtx_include",
    "nvtx_exclude",
    "profile_from_start",
    "kernel_id",
    "kernel_name_base",
    "output_directory",
    "output_file",
    "output_format",
    "output_gzip",
    "kernel_trace",
    "summary",
    "log_level",
    "name",
};

/// A position in an input file (1-based); line 0 when unknown.
struct Mark {
  int line = 0;
  int column = 0;
};

/// One job, as written: every field is unset unless the job has the key.
struct JobSpec {
  size_t index = 0;  ///< 0-based position in "jobs"
  Mark mark;         ///< where the job starts
  std::string name;  ///< the optional "name" key, for messages

  RunSettings settings;                                             ///< keys shared with the CLI
  std::optional<std::vector<std::string>> pmc;                      ///< one counter group
  std::optional<std::vector<std::vector<std::string>>> pmc_groups;  ///< rotation groups
  std::optional<uint64_t> pmc_group_interval;
  std::optional<bool> timing_pass;
  std::optional<bool> timing_pass_flush_cache;
  // Per-pass services (job_replay_mode: kernel): a job selects one of them instead of pmc.
  std::optional<bool> pc_sampling;
  std::optional<uint64_t> pc_sampling_period;
  std::optional<std::vector<std::string>> sass_metrics;
  std::optional<bool> source_counters;
  std::optional<std::vector<std::string>> pm_sampling;
  std::optional<uint64_t> pm_sampling_interval;

  std::vector<std::string> keys;          ///< the keys present, in file order
  std::map<std::string, Mark> key_marks;  ///< where each key is

  bool has(std::string_view key) const { return key_marks.count(std::string(key)) != 0; }
};

/// A parsed input file.
struct InputFile {
  std::string path;  ///< as given (used in messages)
  JobReplayMode job_replay_mode = JobReplayMode::kApplication;
  bool job_replay_mode_given = false;
  Mark job_replay_mode_mark;
  std::vector<JobSpec> jobs;  ///< never empty

  /// "file:line:column: jobs[i].key" (or "file: jobs[i].key" without a position) for messages.
  std::string where(const JobSpec& job, std::string_view key = {}) const;
  /// "job 2" or "job 2 (\"name\")": how messages name a job (1-based).
  std::string job_label(const JobSpec& job) const;
};

enum class InputFormat { kJson, kYaml };

/// Parse @p text (already read from @p name). Syntax, type, unknown-key and value errors are
/// KREPLAY_STATUS_ERROR_INVALID_ARGUMENT with one line.
Result<InputFile> parse_input_text(std::string_view text, InputFormat format,
                                   std::string_view name);

/// Read and parse @p path. The format comes from the extension (.json, .yaml, .yml); otherwise a
/// file whose first non-blank character is '{' is JSON and anything else YAML.
Result<InputFile> load_input_file(const std::string& path);

}  // namespace kreplay::cli
