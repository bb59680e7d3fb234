#include "config/tool_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/env.hpp"
#include "config/text.hpp"

namespace kreplay::config {
namespace {

using nlohmann::json;

template <typename Enum, size_t N>
std::optional<Enum> lookup(std::string_view text, const std::array<std::string_view, N>& names,
                           const std::array<Enum, N>& values) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == text) return values[i];
  }
  return std::nullopt;
}

constexpr std::array<ReplayMode, 4> kReplayModes = {ReplayMode::kKernel, ReplayMode::kAuto,
                                                    ReplayMode::kApplication, ReplayMode::kRange};
constexpr std::array<ReplayMemory, 2> kReplayMemories = {ReplayMemory::kAll, ReplayMemory::kArgs};
constexpr std::array<GraphProfiling, 2> kGraphProfilings = {GraphProfiling::kNode,
                                                            GraphProfiling::kGraph};
constexpr std::array<CacheControl, 2> kCacheControls = {CacheControl::kAll, CacheControl::kNone};
constexpr std::array<SnapshotMode, 3> kSnapshotModes = {SnapshotMode::kAuto, SnapshotMode::kFull,
                                                        SnapshotMode::kWriteSet};
constexpr std::array<PassKind, 5> kPassKinds = {PassKind::kCounters, PassKind::kTiming,
                                                PassKind::kPcSampling, PassKind::kSassMetrics,
                                                PassKind::kPmSampling};
constexpr std::array<OutputFormat, 4> kOutputFormats = {
    OutputFormat::kSqlite, OutputFormat::kCsv, OutputFormat::kJson, OutputFormat::kPerfetto};

// nlohmann's messages start with "[json.exception.type_error.302] "; users need only the rest.
std::string strip_nlohmann_prefix(std::string_view what) {
  if (!what.empty() && what[0] == '[') {
    size_t close = what.find("] ");
    if (close != std::string_view::npos) what.remove_prefix(close + 2);
  }
  return std::string(what);
}

template <typename Enum>
Enum enum_at(const json& j, const char* key, std::optional<Enum> (*parse)(std::string_view)) {
  const std::string text = j.at(key).get<std::string>();
  auto value = parse(text);
  if (!value) {
    throw json::other_error::create(501, fmt::format("{}: unknown value \"{}\"", key, text), &j);
  }
  return *value;
}

json filters_to_json(const FilterOptions& f) {
  return json{{"include_regex", f.include_regex}, {"exclude_regex", f.exclude_regex},
              {"kernel_name", f.kernel_name},     {"iteration_range", f.iteration_range},
              {"launch_skip", f.launch_skip},     {"launch_count", f.launch_count},
              {"nvtx_include", f.nvtx_include},   {"nvtx_exclude", f.nvtx_exclude},
              {"profile_from_start", f.profile_from_start},
              {"kernel_id", f.kernel_id},         {"kernel_name_base", f.kernel_name_base}};
}

FilterOptions filters_from_json(const json& j) {
  FilterOptions f;
  j.at("include_regex").get_to(f.include_regex);
  j.at("exclude_regex").get_to(f.exclude_regex);
  j.at("kernel_name").get_to(f.kernel_name);
  j.at("iteration_range").get_to(f.iteration_range);
  j.at("launch_skip").get_to(f.launch_skip);
  j.at("launch_count").get_to(f.launch_count);
  j.at("nvtx_include").get_to(f.nvtx_include);
  j.at("nvtx_exclude").get_to(f.nvtx_exclude);
  j.at("profile_from_start").get_to(f.profile_from_start);
  j.at("kernel_id").get_to(f.kernel_id);
  j.at("kernel_name_base").get_to(f.kernel_name_base);
  return f;
}

json output_to_json(const OutputOptions& o) {
  json formats = json::array();
  for (OutputFormat f : o.formats) formats.push_back(std::string(to_string(f)));
  return json{{"directory", o.directory},
              {"file", o.file},
              {"file_from_user", o.file_from_user},
              {"formats", formats},
              {"kernel_trace", o.kernel_trace},
              {"summary", o.summary},
              {"gzip", o.gzip}};
}

OutputOptions output_from_json(const json& j) {
  OutputOptions o;
  j.at("directory").get_to(o.directory);
  j.at("file").get_to(o.file);
  j.at("file_from_user").get_to(o.file_from_user);
  o.formats.clear();
  for (const auto& f : j.at("formats")) {
    const std::string text = f.get<std::string>();
    auto format = parse_output_format(text);
    if (!format) {
      throw json::other_error::create(501, fmt::format("formats: unknown value \"{}\"", text), &j);
    }
    o.formats.push_back(*format);
  }
  j.at("kernel_trace").get_to(o.kernel_trace);
  j.at("summary").get_to(o.summary);
  j.at("gzip").get_to(o.gzip);
  return o;
}

}  // namespace

std::string_view to_string(ReplayMode mode) {
  switch (mode) {
    case ReplayMode::kApplication:
      return "application";
    case ReplayMode::kKernel:
      return "kernel";
    case ReplayMode::kRange:
      return "range";
    case ReplayMode::kAuto:
      return "auto";
  }
  return "?";
}

std::string_view to_string(ReplayMemory memory) {
  return memory == ReplayMemory::kArgs ? "args" : "all";
}

std::string_view to_string(GraphProfiling graph_profiling) {
  return graph_profiling == GraphProfiling::kGraph ? "graph" : "node";
}

std::string_view to_string(CacheControl cache_control) {
  return cache_control == CacheControl::kNone ? "none" : "all";
}

std::string_view to_string(SnapshotMode snapshot) {
  return kSnapshotModeNames[static_cast<size_t>(snapshot)];
}

std::string_view to_string(PassKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < kPassKindNames.size() ? kPassKindNames[i] : "?";
}

std::string pass_position_option(PassKind kind) {
  std::string name(to_string(kind));
  std::replace(name.begin(), name.end(), '_', '-');
  return kind == PassKind::kTiming ? "--timing-pass-position" : "--" + name + "-pass-position";
}

std::string_view to_string(OutputFormat format) {
  switch (format) {
    case OutputFormat::kSqlite:
      return "sqlite";
    case OutputFormat::kCsv:
      return "csv";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kPerfetto:
      return "perfetto";
  }
  return "?";
}

std::optional<ReplayMode> parse_replay_mode(std::string_view text) {
  return lookup(text, kReplayModeNames, kReplayModes);
}
std::optional<ReplayMemory> parse_replay_memory(std::string_view text) {
  return lookup(text, kReplayMemoryNames, kReplayMemories);
}
std::optional<GraphProfiling> parse_graph_profiling(std::string_view text) {
  return lookup(text, kGraphProfilingNames, kGraphProfilings);
}
std::optional<CacheControl> parse_cache_control(std::string_view text) {
  return lookup(text, kCacheControlNames, kCacheControls);
}
std::optional<SnapshotMode> parse_snapshot_mode(std::string_view text) {
  return lookup(text, kSnapshotModeNames, kSnapshotModes);
}
std::optional<PassKind> parse_pass_kind(std::string_view text) {
  return lookup(text, kPassKindNames, kPassKinds);
}
std::optional<OutputFormat> parse_output_format(std::string_view text) {
  return lookup(text, kOutputFormatNames, kOutputFormats);
}

void to_json(json& j, const ToolConfig& c) {
  json passes = json::array();
  for (const PassSpec& p : c.passes) {
    passes.push_back(json{{"kind", std::string(to_string(p.kind))},
                          {"group", p.group},
                          {"flush_cache", p.flush_cache},
                          {"after_counters", p.after_counters}});
  }
  j = json{{"schema_version", c.schema_version},
           {"pmc_groups", c.pmc_groups},
           {"metrics", c.metrics},
           {"replay_mode", std::string(to_string(c.replay_mode))},
           {"range_markers", c.range_markers},
           {"passes", passes},
           {"services", json{{"pc_sampling_period", c.services.pc_sampling_period},
                             {"sass_metrics", c.services.sass_metrics},
                             {"pm_metrics", c.services.pm_metrics},
                             {"pm_interval_ns", c.services.pm_interval_ns}}},
           {"rotation", json{{"groups", c.rotation.groups}, {"interval", c.rotation.interval}}},
           {"filters", filters_to_json(c.filters)},
           {"output", output_to_json(c.output)},
           {"replay_memory", std::string(to_string(c.replay_memory))},
           {"graph_profiling", std::string(to_string(c.graph_profiling))},
           {"cache_control", std::string(to_string(c.cache_control))},
           {"snapshot", std::string(to_string(c.snapshot))},
           {"check_divergence", c.check_divergence},
           {"ranks", c.ranks},
           {"log_level", c.log_level},
           {"app_pass", c.app_pass},
           {"app_pass_count", c.app_pass_count},
           {"command", c.command},
           {"origin", c.origin},
           {"section_metrics", c.section_metrics},
           {"sections_label", c.sections_label},
           {"sections_default", c.sections_default}};
}

void from_json(const json& j, ToolConfig& c) {
  ToolConfig out;
  j.at("schema_version").get_to(out.schema_version);
  if (out.schema_version != kToolConfigSchemaVersion) {
    throw json::other_error::create(
        502,
        fmt::format("schema_version is {} but this tool reads version {}; the kreplay command and "
                    "its tool library come from different builds",
                    out.schema_version, kToolConfigSchemaVersion),
        &j);
  }
  j.at("pmc_groups").get_to(out.pmc_groups);
  j.at("metrics").get_to(out.metrics);
  out.replay_mode = enum_at<ReplayMode>(j, "replay_mode", &parse_replay_mode);
  j.at("range_markers").get_to(out.range_markers);
  for (const auto& p : j.at("passes")) {
    PassSpec pass;
    pass.kind = enum_at<PassKind>(p, "kind", &parse_pass_kind);
    p.at("group").get_to(pass.group);
    p.at("flush_cache").get_to(pass.flush_cache);
    p.at("after_counters").get_to(pass.after_counters);
    if (pass.kind == PassKind::kCounters &&
        (pass.group < 0 || static_cast<size_t>(pass.group) >= out.pmc_groups.size())) {
      throw json::other_error::create(
          503, fmt::format("passes: counter group {} does not exist", pass.group), &j);
    }
    out.passes.push_back(pass);
  }
  const json& services = j.at("services");
  services.at("pc_sampling_period").get_to(out.services.pc_sampling_period);
  services.at("sass_metrics").get_to(out.services.sass_metrics);
  services.at("pm_metrics").get_to(out.services.pm_metrics);
  services.at("pm_interval_ns").get_to(out.services.pm_interval_ns);
  const json& rotation = j.at("rotation");
  rotation.at("groups").get_to(out.rotation.groups);
  rotation.at("interval").get_to(out.rotation.interval);
  out.filters = filters_from_json(j.at("filters"));
  out.output = output_from_json(j.at("output"));
  out.replay_memory = enum_at<ReplayMemory>(j, "replay_memory", &parse_replay_memory);
  out.graph_profiling = enum_at<GraphProfiling>(j, "graph_profiling", &parse_graph_profiling);
  out.cache_control = enum_at<CacheControl>(j, "cache_control", &parse_cache_control);
  j.at("check_divergence").get_to(out.check_divergence);
  j.at("log_level").get_to(out.log_level);
  j.at("app_pass").get_to(out.app_pass);
  j.at("app_pass_count").get_to(out.app_pass_count);
  j.at("command").get_to(out.command);
  j.at("origin").get_to(out.origin);
  // Added after schema version 1 was first released: optional.
  if (j.contains("section_metrics")) j.at("section_metrics").get_to(out.section_metrics);
  if (j.contains("sections_label")) j.at("sections_label").get_to(out.sections_label);
  if (j.contains("sections_default")) j.at("sections_default").get_to(out.sections_default);
  if (j.contains("ranks")) j.at("ranks").get_to(out.ranks);
  if (j.contains("snapshot"))
    out.snapshot = enum_at<SnapshotMode>(j, "snapshot", &parse_snapshot_mode);
  c = std::move(out);
}

std::string serialize_tool_config(const ToolConfig& config) {
  json j = config;
  // The command line can hold any bytes (it is kept for the record); every field the tool acts on
  // was checked to be UTF-8 by the command. Replace, rather than throw on, invalid bytes.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<ToolConfig> parse_tool_config(std::string_view json_text) {
  try {
    json j = json::parse(json_text.begin(), json_text.end());
    return j.get<ToolConfig>();
  } catch (const json::exception& e) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("{}: malformed tool config: {}; let the kreplay command set it",
                             kToolConfigEnv, printable(strip_nlohmann_prefix(e.what()), 300)));
  }
}

std::optional<std::string> tool_config_inline_value(const ToolConfig& config) {
  std::string text = serialize_tool_config(config);
  if (text.size() > kToolConfigInlineLimit) return std::nullopt;
  return text;
}

Result<ToolConfig> load_tool_config_from_value(std::string_view value) {
  size_t first = 0;
  while (first < value.size() && std::isspace(static_cast<unsigned char>(value[first]))) ++first;
  std::string_view rest = value.substr(first);
  if (!rest.empty() && rest[0] == '{') return parse_tool_config(rest);
  if (!rest.empty() && rest[0] == '@') {
    std::string path(rest.substr(1));
    if (path.empty()) {
      return Error(
          KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
          fmt::format("{}='@' names no file; write @/path/to/config.json", kToolConfigEnv));
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("{}: cannot read {}; the file must stay in place until the "
                               "application exits",
                               kToolConfigEnv, printable(path, 200)));
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse_tool_config(text.str());
  }
  return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
               fmt::format("{}='{}' is neither inline JSON nor @/path/to/file.json; run the "
                           "application through the kreplay command",
                           kToolConfigEnv, printable(rest, 40)));
}

Result<ToolConfig> load_tool_config_from_env() {
  auto value = env::get(kToolConfigEnv);
  if (!value) {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                 fmt::format("{} is not set; run the application through the kreplay command",
                             kToolConfigEnv));
  }
  return load_tool_config_from_value(*value);
}

}  // namespace kreplay::config
