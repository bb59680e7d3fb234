// RunSettings: the options that the command line and an input-file job share.
//
// Every field is unset unless the user gave it, so "left at its default" is never mistaken for
// "set" (rocprofv3's att_serialize_all bug: an argparse default of False counted as set and
// conflicted with a job's true). The plan merges the command line with each job, and in
// job_replay_mode: kernel the jobs with each other; two given values that differ are an error
// that names the option and both values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.hpp"
#include "config/tool_config.hpp"

namespace kreplay::cli {

// The settings hold the run configuration's own values (config/tool_config.hpp).
using config::CacheControl;
using config::GraphProfiling;
using config::OutputFormat;
using config::ReplayMemory;
using config::ReplayMode;
using config::SnapshotMode;

struct RunSettings {
  std::optional<std::vector<std::string>> metrics;
  std::optional<std::string> metric_set;                 ///< --set NAME
  std::optional<std::vector<std::string>> sections;      ///< --section NAME|regex:EXPR ...
  std::optional<std::string> section_folder;             ///< --section-folder DIR
  std::optional<ReplayMode> replay_mode;
  std::optional<std::string> range_markers;
  std::optional<ReplayMemory> replay_memory;
  std::optional<GraphProfiling> graph_profiling;
  std::optional<CacheControl> cache_control;
  std::optional<SnapshotMode> snapshot;
  std::optional<bool> check_divergence;
  std::optional<std::string> kernel_include_regex;
  std::optional<std::string> kernel_exclude_regex;
  std::optional<std::string> kernel_name;
  std::optional<std::string> kernel_iteration_range;
  std::optional<uint64_t> launch_skip;
  std::optional<uint64_t> launch_count;
  std::optional<std::vector<std::string>> nvtx_include;  ///< --nvtx-include, one expression each
  std::optional<std::vector<std::string>> nvtx_exclude;
  std::optional<bool> profile_from_start;                ///< --profile-from-start on|off
  std::optional<std::string> kernel_id;                  ///< ncu's context:stream:name:invocation
  std::optional<std::string> kernel_name_base;           ///< function | demangled | mangled
  std::optional<std::string> output_directory;
  std::optional<std::string> output_file;
  std::optional<std::vector<OutputFormat>> output_format;
  std::optional<bool> output_gzip;
  std::optional<bool> kernel_trace;
  std::optional<bool> summary;
  std::optional<std::string> log_level;

  bool operator==(const RunSettings&) const = default;
};

// X(field, job key, command-line flag) for every RunSettings field, in schema order.
#define KREPLAY_RUN_SETTINGS(X)                                                   \
  X(metrics, "metrics", "--metrics")                                              \
  X(metric_set, "set", "--set")                                                   \
  X(sections, "section", "--section")                                             \
  X(section_folder, "section_folder", "--section-folder")                         \
  X(replay_mode, "replay_mode", "--replay-mode")                                  \
  X(range_markers, "range_markers", "--range-markers")                            \
  X(replay_memory, "replay_memory", "--replay-memory")                            \
  X(graph_profiling, "graph_profiling", "--graph-profiling")                      \
  X(cache_control, "cache_control", "--cache-control")                            \
  X(snapshot, "snapshot", "--snapshot")                                          \
  X(check_divergence, "check_divergence", "--check-divergence")                   \
  X(kernel_include_regex, "kernel_include_regex", "--kernel-include-regex")       \
  X(kernel_exclude_regex, "kernel_exclude_regex", "--kernel-exclude-regex")       \
  X(kernel_name, "kernel_name", "--kernel-name")                                  \
  X(kernel_iteration_range, "kernel_iteration_range", "--kernel-iteration-range") \
  X(launch_skip, "launch_skip", "--launch-skip")                                  \
  X(launch_count, "launch_count", "--launch-count")                               \
  X(nvtx_include, "nvtx_include", "--nvtx-include")                               \
  X(nvtx_exclude, "nvtx_exclude", "--nvtx-exclude")                               \
  X(profile_from_start, "profile_from_start", "--profile-from-start")             \
  X(kernel_id, "kernel_id", "--kernel-id")                                        \
  X(kernel_name_base, "kernel_name_base", "--kernel-name-base")                   \
  X(output_directory, "output_directory", "--output-directory")                   \
  X(output_file, "output_file", "--output-file")                                  \
  X(output_format, "output_format", "--output-format")                            \
  X(output_gzip, "output_gzip", "--output-gzip")                                  \
  X(kernel_trace, "kernel_trace", "--kernel-trace")                               \
  X(summary, "summary", "--summary")                                              \
  X(log_level, "log_level", "--log-level")

/// Two given values of one option that differ.
struct SettingConflict {
  std::string key;     ///< the job key, e.g. "output_directory"
  std::string flag;    ///< the command-line flag, e.g. "--output-directory"
  std::string first;   ///< the value already in `into`, as text for a message
  std::string second;  ///< the value from `from`
};

/// Copy every field @p from gives into @p into. A field both give with different values is not
/// copied and is returned (the first such field, in KREPLAY_RUN_SETTINGS order).
std::optional<SettingConflict> merge_settings(RunSettings& into, const RunSettings& from);

/// The job keys of the fields @p settings gives, in KREPLAY_RUN_SETTINGS order.
std::vector<std::string> given_keys(const RunSettings& settings);

/// Value text for messages: strings quoted, lists as "[a, b]", booleans true/false.
std::string describe_value(const std::string& value);
std::string describe_value(const std::vector<std::string>& value);
std::string describe_value(const std::vector<OutputFormat>& value);
std::string describe_value(ReplayMode value);
std::string describe_value(ReplayMemory value);
std::string describe_value(GraphProfiling value);
std::string describe_value(CacheControl value);
std::string describe_value(SnapshotMode value);
std::string describe_value(uint64_t value);
std::string describe_value(bool value);

// ---------------------------------------------------------------------------------------------
// Value checks shared by the command line and input files. @p what names the option in the
// message: "--replay-mode" on the command line, "input.yaml:3:5: jobs[0].replay_mode" in a file.
// Each error is one line that names the problem and the fix.
// ---------------------------------------------------------------------------------------------

/// Split "a,b c" into {"a", "b", "c"}: commas and blanks separate, empty items are dropped.
std::vector<std::string> split_list(std::string_view text);

/// The candidate closest to @p wanted, for "did you mean": the shortest candidate that starts with
/// @p wanted (a prefix is what a user who stopped typing early wrote), else the best of suggest();
/// "" when none is close.
std::string closest_name(std::string_view wanted, const std::vector<std::string>& candidates);

/// An unknown enum value: "<what>: unknown value "x"; use a, b or c (did you mean b?)".
Status unknown_value(std::string_view what, std::string_view value,
                     const std::vector<std::string>& accepted);

Result<ReplayMode> parse_replay_mode_value(std::string_view what, std::string_view text);
Result<ReplayMemory> parse_replay_memory_value(std::string_view what, std::string_view text);
Result<GraphProfiling> parse_graph_profiling_value(std::string_view what, std::string_view text);
Result<CacheControl> parse_cache_control_value(std::string_view what, std::string_view text);
Result<SnapshotMode> parse_snapshot_mode_value(std::string_view what, std::string_view text);
/// --clock-control: "none" only; anything else is refused with one line saying why.
Status check_clock_control(std::string_view what, std::string_view text);
/// Each item one of kOutputFormatNames; duplicates dropped, order kept; at least one.
Result<std::vector<OutputFormat>> parse_output_formats(std::string_view what,
                                                       const std::vector<std::string>& items);
/// "", "cuda-profiler" or "nvtx:NAME" with a non-empty NAME.
Status check_range_markers(std::string_view what, std::string_view text);
/// --profile-from-start: "on" or "off" (ncu's spelling; also yes/no, true/false, 1/0).
Result<bool> parse_profile_from_start_value(std::string_view what, std::string_view text);
/// --kernel-name-base: one of kKernelNameBaseNames.
Status check_kernel_name_base(std::string_view what, std::string_view text);
/// --kernel-id: ncu's context:stream:name:invocation (config/kernel_id.hpp).
Status check_kernel_id(std::string_view what, std::string_view text);
/// --nvtx-include / --nvtx-exclude expressions (config/nvtx_filter.hpp); at least one, none empty.
Status check_nvtx_expressions(std::string_view what, const std::vector<std::string>& exprs);
/// A name in kLogLevelNames or 0-4.
Status check_log_level(std::string_view what, std::string_view text);
/// Counter or metric names: at least one, none empty, none that looks like a path (an
/// application swallowed by a list option that was not closed with --).
Status check_counter_names(std::string_view what, const std::vector<std::string>& names);

}  // namespace kreplay::cli
