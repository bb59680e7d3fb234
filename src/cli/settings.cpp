#include "cli/settings.hpp"

#include <fmt/format.h>

#include "common/logging.hpp"
#include "common/util.hpp"
#include "config/kernel_id.hpp"
#include "config/nvtx_filter.hpp"
#include "config/text.hpp"

namespace kreplay::cli {

using config::kCacheControlNames;
using config::kGraphProfilingNames;
using config::kLogLevelNames;
using config::kOutputFormatNames;
using config::kReplayMemoryNames;
using config::kReplayModeNames;
using config::kSnapshotModeNames;
using config::parse_cache_control;
using config::parse_graph_profiling;
using config::parse_output_format;
using config::parse_replay_memory;
using config::parse_replay_mode;
using config::parse_snapshot_mode;
using config::printable;

std::string describe_value(const std::string& value) {
  return fmt::format("\"{}\"", printable(value));
}

std::string describe_value(const std::vector<std::string>& value) {
  return printable(fmt::format("[{}]", fmt::join(value, ", ")), 120);
}

std::string describe_value(const std::vector<OutputFormat>& value) {
  std::vector<std::string_view> names;
  names.reserve(value.size());
  for (OutputFormat f : value) names.push_back(to_string(f));
  return fmt::format("[{}]", fmt::join(names, ", "));
}

std::string describe_value(ReplayMode value) {
  return std::string(to_string(value));
}
std::string describe_value(ReplayMemory value) {
  return std::string(to_string(value));
}
std::string describe_value(GraphProfiling value) {
  return std::string(to_string(value));
}
std::string describe_value(CacheControl value) {
  return std::string(to_string(value));
}
std::string describe_value(SnapshotMode value) {
  return std::string(to_string(value));
}
std::string describe_value(uint64_t value) {
  return std::to_string(value);
}
std::string describe_value(bool value) {
  return value ? "true" : "false";
}

std::optional<SettingConflict> merge_settings(RunSettings& into, const RunSettings& from) {
#define KREPLAY_MERGE_ONE(field, key, flag)                                                        \
  if (from.field) {                                                                                \
    if (into.field && !(*into.field == *from.field)) {                                             \
      return SettingConflict{key, flag, describe_value(*into.field), describe_value(*from.field)}; \
    }                                                                                              \
    into.field = from.field;                                                                       \
  }
  KREPLAY_RUN_SETTINGS(KREPLAY_MERGE_ONE)
#undef KREPLAY_MERGE_ONE
  return std::nullopt;
}

std::vector<std::string> given_keys(const RunSettings& settings) {
  std::vector<std::string> keys;
#define KREPLAY_GIVEN_ONE(field, key, flag) \
  if (settings.field) keys.emplace_back(key);
  KREPLAY_RUN_SETTINGS(KREPLAY_GIVEN_ONE)
#undef KREPLAY_GIVEN_ONE
  return keys;
}

namespace {

template <size_t N>
std::vector<std::string> names_of(const std::array<std::string_view, N>& names) {
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
  return out;
}

std::string closest_name(std::string_view wanted, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  if (wanted.size() >= 3) {
    for (const std::string& c : candidates) {
      if (c.size() > wanted.size() && c.compare(0, wanted.size(), wanted) == 0 &&
          (!best || c.size() < best->size())) {
        best = &c;
      }
    }
  }
  if (best) return *best;
  auto close = suggest(wanted, candidates, 1);
  return close.empty() ? std::string() : close[0];
}

Status unknown_value(std::string_view what, std::string_view value,
                     const std::vector<std::string>& accepted) {
  std::string close = closest_name(value, accepted);
  std::string hint = close.empty() ? "" : fmt::format(" (did you mean {}?)", close);
  return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
               fmt::format("{}: unknown value \"{}\"; use {}{}", what, printable(value),
                           join_or(accepted), hint));
}

Result<ReplayMode> parse_replay_mode_value(std::string_view what, std::string_view text) {
  auto mode = parse_replay_mode(text);
  if (!mode) return unknown_value(what, text, names_of(kReplayModeNames));
  return *mode;
}

Result<ReplayMemory> parse_replay_memory_value(std::string_view what, std::string_view text) {
  auto memory = parse_replay_memory(text);
  if (!memory) return unknown_value(what, text, names_of(kReplayMemoryNames));
  return *memory;
}

Result<GraphProfiling> parse_graph_profiling_value(std::string_view what, std::string_view text) {
  auto mode = parse_graph_profiling(text);
  if (!mode) return unknown_value(what, text, names_of(kGraphProfilingNames));
  return *mode;
}

Result<CacheControl> parse_cache_control_value(std::string_view what, std::string_view text) {
  auto mode = parse_cache_control(text);
  if (!mode) return unknown_value(what, text, names_of(kCacheControlNames));
  return *mode;
}

Result<SnapshotMode> parse_snapshot_mode_value(std::string_view what, std::string_view text) {
  auto mode = parse_snapshot_mode(text);
  if (!mode) return unknown_value(what, text, names_of(kSnapshotModeNames));
  return *mode;
}

Status check_clock_control(std::string_view what, std::string_view text) {
  if (text == "none") return Status::Ok();
  return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
               fmt::format("{} '{}': kreplay never changes clocks on a shared GPU; only none is "
                           "accepted (as ncu --clock-control none)",
                           what, text));
}

Result<std::vector<OutputFormat>> parse_output_formats(std::string_view what,
                                                       const std::vector<std::string>& items) {
  std::vector<OutputFormat> formats;
  for (const std::string& item : items) {
    auto format = parse_output_format(item);
    if (!format) return unknown_value(what, item, names_of(kOutputFormatNames));
    if (std::find(formats.begin(), formats.end(), *format) == formats.end()) {
      formats.push_back(*format);
    }
  }
  if (formats.empty()) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("{}: no format given; use one or more of {}, e.g. sqlite,csv", what,
                             join_or(names_of(kOutputFormatNames))));
  }
  return formats;
}

Result<bool> parse_profile_from_start_value(std::string_view what, std::string_view text) {
  if (text == "on" || text == "yes" || text == "true" || text == "1") return true;
  if (text == "off" || text == "no" || text == "false" || text == "0") return false;
  return unknown_value(what, text, {"on", "off"});
}

Status check_kernel_name_base(std::string_view what, std::string_view text) {
  for (std::string_view n : config::kKernelNameBaseNames) {
    if (n == text) return Status::Ok();
  }
  return unknown_value(what, text,
                       std::vector<std::string>(config::kKernelNameBaseNames.begin(),
                                                config::kKernelNameBaseNames.end()));
}

Status check_kernel_id(std::string_view what, std::string_view text) {
  auto id = config::KernelId::Parse(text);
  if (id.ok()) return Status::Ok();
  std::string m = id.status().message();
  // The parser names --kernel-id; an input file's key says where instead.
  if (what != "--kernel-id" && m.starts_with("--kernel-id ")) m = m.substr(12);
  return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
               what == "--kernel-id" ? m : fmt::format("{}: {}", what, m));
}

Status check_nvtx_expressions(std::string_view what, const std::vector<std::string>& exprs) {
  if (exprs.empty()) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                 fmt::format("{} has no expression; give one such as \"step/\"", what));
  }
  for (const auto& e : exprs) {
    auto x = config::NvtxExpression::Parse(e, what);
    if (!x.ok()) return x.status();
  }
  return Status::Ok();
}

Status check_range_markers(std::string_view what, std::string_view text) {
  if (text.empty() || text == "cuda-profiler") return Status::Ok();
  if (text.substr(0, 5) == "nvtx:") {
    if (text.size() > 5) return Status::Ok();
    return Error(
        KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
        fmt::format("{}: \"nvtx:\" names no range; write nvtx:NAME, e.g. nvtx:step", what));
  }
  return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
               fmt::format("{}: unknown markers \"{}\"; use cuda-profiler (cudaProfilerStart/Stop) "
                           "or nvtx:NAME (an NVTX range)",
                           what, printable(text)));
}

Status check_log_level(std::string_view what, std::string_view text) {
  log::Level level{};
  if (text == "quiet" || log::parse_level(text, &level)) return Status::Ok();
  return unknown_value(what, text, names_of(kLogLevelNames));
}

Status check_counter_names(std::string_view what, const std::vector<std::string>& names) {
  if (names.empty()) {
    return Error(
        KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
        fmt::format("{}: no counter given; list at least one, e.g. sm__cycles_elapsed.sum", what));
  }
  for (const std::string& name : names) {
    if (name.find('/') != std::string::npos) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("{}: \"{}\" looks like a path, not a counter; put the application "
                               "after --, e.g. kreplay --pmc A B -- ./app",
                               what, printable(name)));
    }
  }
  return Status::Ok();
}

}  // namespace kreplay::cli
