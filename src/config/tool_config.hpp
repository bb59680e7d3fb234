// ToolConfig: everything the injected tool needs for one run of the application.
//
// The kreplay command builds one ToolConfig per application run (cli/plan.hpp), serializes it to
// JSON and hands it to the tool through the environment variable KREPLAY_TOOL_CONFIG, either
// inline or as "@/path/to/file.json". The tool reads it back with load_tool_config_from_env().
// Both sides are built from this file, and the JSON carries a schema version that must match.
//
// This header is part of kreplay_config, the light library the tool links (nlohmann_json,
// RE2, kreplay_common); it must not pull in CLI11 or yaml-cpp.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.hpp"

namespace kreplay::config {

/// Version of the ToolConfig JSON. Bump it when a field changes meaning or is removed; the tool
/// refuses a config written with another version (the command and the tool ship together).
inline constexpr int kToolConfigSchemaVersion = 1;

/// The environment variable that carries the config: inline JSON, or "@" followed by a path.
inline constexpr const char* kToolConfigEnv = "KREPLAY_TOOL_CONFIG";

/// Above this size the command should write the JSON to a file and pass "@path" (Linux limits
/// one environment string to 128 KiB; leave room for the rest of the environment).
inline constexpr size_t kToolConfigInlineLimit = size_t{64} * 1024;

/// How the passes of a launch are obtained.
enum class ReplayMode {
  kApplication,  ///< no in-process replay: one pass per run; several passes = several runs
  kKernel,       ///< each selected launch is replayed in place, once per pass
  kRange,        ///< consecutive launches are recorded as a range and the range is replayed
  /// Only in settings (--replay-mode auto): planning (cli/plan.cpp resolve_auto) resolves it to
  /// kRange, or to kKernel for a request range replay does not serve. A ToolConfig never holds it.
  kAuto,
};

/// Which tracked memory is snapshotted and restored around a replay.
enum class ReplayMemory {
  kAll,   ///< every tracked region of the device (default)
  kArgs,  ///< only regions the launch's argument bytes point into
};

/// How a replay window saves memory (--snapshot; DESIGN.md §3).
enum class SnapshotMode {
  kAuto,      ///< full where it fits in device memory, else what the launch writes (default)
  kFull,      ///< every tracked region
  kWriteSet,  ///< only what the launch is predicted to write, proven by digests
};

/// How a graph launch is profiled (ncu's --graph-profiling).
enum class GraphProfiling {
  kNode,   ///< every kernel node of a graph launch is a dispatch of its own (default)
  kGraph,  ///< the whole graph launch is one workload with one set of values
};

/// What the caches hold when a counted pass starts (ncu's --cache-control).
enum class CacheControl {
  kAll,   ///< written back and invalidated before every counted pass (default)
  kNone,  ///< left as the previous work left them
};

/// The service one replay pass runs.
enum class PassKind {
  kCounters,     ///< a hardware-counter group (PassSpec::group indexes ToolConfig::pmc_groups)
  kTiming,       ///< clean kernel timing, every other service locally stopped
  kPcSampling,   ///< PC sampling (ToolConfig::services.pc_sampling_period)
  kSassMetrics,  ///< SASS metrics (ToolConfig::services.sass_metrics)
  kPmSampling,   ///< PM sampling (ToolConfig::services.pm_metrics, pm_interval_ns)
};

/// Output formats a run writes.
enum class OutputFormat { kSqlite, kCsv, kJson, kPerfetto };

/// Accepted spellings, in the order the help text and the schema list them. The schema test
/// (cli/schema_test.cpp) checks that share/kreplay/input-schema.json lists exactly these.
inline constexpr std::array<std::string_view, 4> kReplayModeNames = {"kernel", "auto",
                                                                     "application", "range"};
inline constexpr std::array<std::string_view, 2> kReplayMemoryNames = {"all", "args"};
inline constexpr std::array<std::string_view, 2> kGraphProfilingNames = {"node", "graph"};
inline constexpr std::array<std::string_view, 2> kCacheControlNames = {"all", "none"};
inline constexpr std::array<std::string_view, 3> kKernelNameBaseNames = {"function", "demangled",
                                                                         "mangled"};
inline constexpr std::array<std::string_view, 2> kProfileFromStartNames = {"on", "off"};
inline constexpr std::array<std::string_view, 3> kSnapshotModeNames = {"auto", "full",
                                                                       "write-set"};
/// --clock-control: kreplay never changes clocks on a shared GPU, so only "none" is accepted.
inline constexpr std::array<std::string_view, 1> kClockControlNames = {"none"};
inline constexpr std::array<std::string_view, 4> kOutputFormatNames = {"sqlite", "csv", "json",
                                                                       "perfetto"};
inline constexpr std::array<std::string_view, 5> kPassKindNames = {
    "counters", "timing", "pc_sampling", "sass_metrics", "pm_sampling"};
/// Log levels the command accepts by name (common/logging.hpp also takes 0-4).
inline constexpr std::array<std::string_view, 6> kLogLevelNames = {"quiet", "error", "warning",
                                                                   "info",  "debug", "trace"};

std::string_view to_string(ReplayMode mode);
std::string_view to_string(ReplayMemory memory);
std::string_view to_string(GraphProfiling graph_profiling);
std::string_view to_string(CacheControl cache_control);
std::string_view to_string(SnapshotMode snapshot);
std::string_view to_string(PassKind kind);
std::string_view to_string(OutputFormat format);
/// The command-line option that places a service's pass (PassSpec::after_counters), e.g.
/// "--pc-sampling-pass-position" for kPcSampling, "--timing-pass-position" for kTiming.
std::string pass_position_option(PassKind kind);
std::optional<ReplayMode> parse_replay_mode(std::string_view text);
std::optional<ReplayMemory> parse_replay_memory(std::string_view text);
std::optional<GraphProfiling> parse_graph_profiling(std::string_view text);
std::optional<CacheControl> parse_cache_control(std::string_view text);
std::optional<SnapshotMode> parse_snapshot_mode(std::string_view text);
std::optional<PassKind> parse_pass_kind(std::string_view text);
std::optional<OutputFormat> parse_output_format(std::string_view text);

/// Kernel selection, as the user wrote it. KernelFilter (filter.hpp) compiles it; the command
/// validates it before the application starts, so the tool sees only well-formed filters.
struct FilterOptions {
  std::string include_regex{};  ///< RE2, partial match on the demangled name; "" selects all
  std::string exclude_regex{};  ///< RE2, partial match on the demangled name, applied after include
  std::string kernel_name{};    ///< ncu -k: an exact name, or "regex:EXPR"; "" selects all
  std::string iteration_range{};  ///< per-kernel launch numbers, e.g. "[1-3, 5]"; "" = every launch
  uint64_t launch_skip = 0;       ///< launches passing the filters above to skip first
  uint64_t launch_count = 0;      ///< then select at most this many; 0 = no limit
  /// --nvtx-include / --nvtx-exclude: NVTX expressions (nvtx_filter.hpp), checked before the names
  std::vector<std::string> nvtx_include{};
  std::vector<std::string> nvtx_exclude{};
  /// --profile-from-start off: nothing is selected before cudaProfilerStart / after its Stop
  bool profile_from_start = true;
  /// --kernel-id: ncu's "context:stream:name:invocation", each part optional (filter.hpp)
  std::string kernel_id{};
  /// --kernel-name-base: what -k and --kernel-id compare: "function" (default), "demangled",
  /// "mangled"; "" is the default
  std::string kernel_name_base{};

  bool operator==(const FilterOptions&) const = default;
};

/// One pass of a replayed launch, in pass order.
struct PassSpec {
  PassKind kind = PassKind::kCounters;
  int32_t group = -1;  ///< kCounters: index into ToolConfig::pmc_groups; -1 otherwise
  bool flush_cache =
      false;  ///< kTiming: flush the caches before the pass (timing_pass_flush_cache)
  /// -1: the pass stands where it is in ToolConfig::passes (input files). K >= 0 (the command
  /// line's services): after K counter passes of the agent, kAfterAllCounters after all of them;
  /// the tool places it, since on CUDA only the device knows how many passes the counters take.
  int32_t after_counters = -1;
  static constexpr int32_t kAfterAllCounters = INT32_MAX;

  bool operator==(const PassSpec&) const = default;
};

/// Settings of the per-pass services (include/kreplay/services.h); a service runs when a PassSpec
/// of its kind is in ToolConfig::passes.
struct ServiceOptions {
  uint32_t pc_sampling_period = 0;        ///< log2 cycles, 5..31; 0: the SDK's default
  std::vector<std::string> sass_metrics;  ///< empty: the default per-instruction set
  std::vector<std::string> pm_metrics;
  uint64_t pm_interval_ns = 0;  ///< 0: the SDK's default

  bool operator==(const ServiceOptions&) const = default;
};

/// Counter-group rotation without replay (input-file pmc_groups / pmc_group_interval): launch n
/// (1-based, counted per device) collects groups[((n - 1) / interval) % groups.size()].
struct RotationSpec {
  std::vector<std::vector<std::string>> groups;  ///< empty = no rotation
  uint64_t interval = 1;                         ///< launches per group, >= 1

  bool operator==(const RotationSpec&) const = default;
};

/// Where and what a run writes. The directory and file are templates (output_path.hpp) that the
/// tool expands in the application's process, so %pid% names the application.
struct OutputOptions {
  std::string directory = ".";            ///< -d; application replay appends /pass_<k>
  /// -o; writers append "_results.db" and the like. The default (kDefaultOutputFile in
  /// output_path.hpp) becomes "%hostname%/%rank%" when a rank is known.
  std::string file = "%hostname%/%pid%";
  bool file_from_user = false;            ///< -o was given: see claim_output_base()
  std::vector<OutputFormat> formats = {OutputFormat::kSqlite};
  bool kernel_trace = false;  ///< write one record per kernel execution
  bool summary = false;       ///< print and write the summary table
  bool gzip = false;          ///< compress the text formats (json, perfetto)

  bool operator==(const OutputOptions&) const = default;
};

/// Everything the injected tool needs for one application run.
struct ToolConfig {
  int schema_version = kToolConfigSchemaVersion;

  /// Counter groups, one per --pmc flag or counter job, in order. On CUDA the groups are one way
  /// of writing the counter list; the backend may measure them in a different number of passes.
  std::vector<std::vector<std::string>> pmc_groups;
  /// --metrics: split into passes by the backend (their count is known only on the device), and
  /// collected on counter passes that follow the ones listed in `passes`.
  std::vector<std::string> metrics;

  ReplayMode replay_mode = ReplayMode::kApplication;
  /// Range replay only: "" (ranges close at synchronization points and size limits),
  /// "cuda-profiler" (cudaProfilerStart/Stop) or "nvtx:NAME" (an NVTX range named NAME).
  std::string range_markers;

  /// What each execution of a selected launch collects, in pass order. In application replay it
  /// has at most one entry (this run's pass); in kernel and range replay, more than one entry
  /// means the launch is replayed. Empty: no placed pass (metrics only, rotation, or trace only).
  std::vector<PassSpec> passes;
  ServiceOptions services;

  RotationSpec rotation;
  FilterOptions filters;
  OutputOptions output;
  ReplayMemory replay_memory = ReplayMemory::kAll;
  GraphProfiling graph_profiling = GraphProfiling::kNode;
  CacheControl cache_control = CacheControl::kAll;
  SnapshotMode snapshot = SnapshotMode::kAuto;  ///< --snapshot
  bool check_divergence = false;  ///< --check-divergence
  /// --ranks: profile only the processes of these ranks (output_path.hpp, mpi_rank()); the others
  /// run without profiling. Empty: every process.
  std::vector<int64_t> ranks;
  /// One of kLogLevelNames or 0-4; "" when the user gave none, so the tool keeps
  /// KREPLAY_LOG_LEVEL from the environment (or its default).
  std::string log_level;

  /// Application replay: which run this is (1-based) and how many runs the plan makes.
  uint32_t app_pass = 1;
  uint32_t app_pass_count = 1;

  /// The application command line, for the record (metadata in the outputs).
  std::vector<std::string> command;
  /// Where this run came from, for messages: "command line" or "input.yaml, job 2".
  std::string origin;

  /// Counters of the sections asked for (--set, --section, or the default set basic when no
  /// counters are named). Collected like --metrics, but only those the agent has: the rest are
  /// left out with one note (the host device has none of the CUDA sections' metrics).
  std::vector<std::string> section_metrics;
  /// "set basic" or "sections SpeedOfLight, Occupancy": for messages.
  std::string sections_label;
  /// The sections are the default (no counters named): a device without them says nothing.
  bool sections_default = false;

  bool operator==(const ToolConfig&) const = default;
};

/// nlohmann ADL hooks. from_json throws nlohmann::json exceptions on malformed input, as nlohmann
/// expects; use parse_tool_config() to get a Status instead.
void to_json(nlohmann::json& j, const ToolConfig& config);
void from_json(const nlohmann::json& j, ToolConfig& config);

/// Serialize to compact JSON.
std::string serialize_tool_config(const ToolConfig& config);

/// Parse JSON text written by serialize_tool_config(). Errors: malformed JSON, a missing or
/// mistyped field, an unknown enum value, or another schema_version.
Result<ToolConfig> parse_tool_config(std::string_view json_text);

/// The value to put in KREPLAY_TOOL_CONFIG: the inline JSON when it is at most
/// kToolConfigInlineLimit bytes, otherwise nullopt (write the JSON to a file and pass "@path").
std::optional<std::string> tool_config_inline_value(const ToolConfig& config);

/// Read KREPLAY_TOOL_CONFIG: inline JSON (first non-blank character '{') or "@/path/file.json".
/// @retval KREPLAY_STATUS_ERROR_NOT_AVAILABLE the variable is not set (not run by kreplay)
/// @retval KREPLAY_STATUS_ERROR_INVALID_ARGUMENT anything else is wrong; the message says what
Result<ToolConfig> load_tool_config_from_env();

/// Same, from a given value of the variable (tests, and tools that read it themselves).
Result<ToolConfig> load_tool_config_from_value(std::string_view value);

}  // namespace kreplay::config
