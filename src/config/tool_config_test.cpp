// Pins: the ToolConfig JSON round trip, strict decoding, and the KREPLAY_TOOL_CONFIG contract
// (inline JSON or @file, clear errors otherwise).
#include "config/tool_config.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace kreplay::config {
namespace {

ToolConfig full_config() {
  ToolConfig c;
  c.pmc_groups = {{"sm__cycles_elapsed.avg", "smsp__inst_executed.sum"}, {"dram__bytes_read.sum"}};
  c.metrics = {"sm__throughput.avg.pct_of_peak_sustained_elapsed"};
  c.replay_mode = ReplayMode::kRange;
  c.cache_control = CacheControl::kNone;
  c.check_divergence = true;
  c.range_markers = "nvtx:step";
  c.passes = {{PassKind::kCounters, 0, false},
              {PassKind::kTiming, -1, true},
              {PassKind::kCounters, 1, false}};
  c.rotation.groups = {{"a"}, {"b", "c"}};
  c.rotation.interval = 4;
  c.filters.include_regex = "gemm";
  c.filters.exclude_regex = "naive";
  c.filters.kernel_name = "regex:^g";
  c.filters.iteration_range = "[1-3, 5]";
  c.filters.launch_skip = 10;
  c.filters.launch_count = 5;
  c.output.directory = "out/%rank%";
  c.output.file = "run_%pid%";
  c.output.file_from_user = true;
  c.output.formats = {OutputFormat::kCsv, OutputFormat::kJson, OutputFormat::kPerfetto};
  c.output.kernel_trace = true;
  c.output.summary = true;
  c.output.gzip = true;
  c.replay_memory = ReplayMemory::kArgs;
  c.log_level = "debug";
  c.app_pass = 2;
  c.app_pass_count = 3;
  c.command = {"./app", "--size", "4096", "with space"};
  c.origin = "jobs.yaml, job 2";
  c.section_metrics = {"gpu__time_duration.sum", "sm__warps_active.avg.pct_of_peak_sustained_active"};
  c.sections_label = "set basic";
  c.sections_default = true;
  return c;
}

TEST(ToolConfig, SectionFieldsAreOptionalWhenReading) {
  nlohmann::json j = nlohmann::json::parse(serialize_tool_config(full_config()));
  for (const char* key : {"section_metrics", "sections_label", "sections_default"}) j.erase(key);
  auto c = parse_tool_config(j.dump());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->section_metrics.empty());
  EXPECT_FALSE(c->sections_default);
}

TEST(ToolConfig, DefaultsAreDocumented) {
  ToolConfig c;
  EXPECT_EQ(c.schema_version, kToolConfigSchemaVersion);
  EXPECT_EQ(c.replay_mode, ReplayMode::kApplication);
  EXPECT_EQ(c.output.directory, ".");
  EXPECT_EQ(c.output.file, "%hostname%/%pid%");
  ASSERT_EQ(c.output.formats.size(), 1u);
  EXPECT_EQ(c.output.formats[0], OutputFormat::kSqlite);
  EXPECT_EQ(c.replay_memory, ReplayMemory::kAll);
  EXPECT_EQ(c.app_pass, 1u);
  EXPECT_EQ(c.app_pass_count, 1u);
}

TEST(ToolConfig, JsonRoundTripKeepsEveryField) {
  ToolConfig c = full_config();
  auto back = parse_tool_config(serialize_tool_config(c));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, c);
}

TEST(ToolConfig, SerializingNeverThrowsOnNonUtf8Commands) {
  ToolConfig c;
  c.command = {"./app", "caf\xe9"};  // argv may hold any bytes; kept for the record only
  std::string text;
  ASSERT_NO_THROW(text = serialize_tool_config(c));
  auto back = parse_tool_config(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->command[1], "caf\xef\xbf\xbd");  // U+FFFD
}

TEST(ToolConfig, DefaultConfigRoundTrips) {
  auto back = parse_tool_config(serialize_tool_config(ToolConfig{}));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, ToolConfig{});
}

TEST(ToolConfig, AdlHooksWork) {
  nlohmann::json j = full_config();
  EXPECT_EQ(j.at("replay_mode"), "range");
  EXPECT_EQ(j.at("passes")[1].at("kind"), "timing");
  EXPECT_EQ(j.at("output").at("formats")[2], "perfetto");
  EXPECT_EQ(j.get<ToolConfig>(), full_config());
}

TEST(ToolConfig, EnumNamesRoundTrip) {
  for (auto name : kReplayModeNames) EXPECT_EQ(to_string(*parse_replay_mode(name)), name);
  for (auto name : kReplayMemoryNames) EXPECT_EQ(to_string(*parse_replay_memory(name)), name);
  for (auto name : kGraphProfilingNames) {
    EXPECT_EQ(to_string(*parse_graph_profiling(name)), name);
  }
  for (auto name : kCacheControlNames) EXPECT_EQ(to_string(*parse_cache_control(name)), name);
  for (auto name : kOutputFormatNames) EXPECT_EQ(to_string(*parse_output_format(name)), name);
  for (auto name : kPassKindNames) EXPECT_EQ(to_string(*parse_pass_kind(name)), name);
  EXPECT_FALSE(parse_replay_mode("Kernel").has_value());
  EXPECT_FALSE(parse_output_format("rocpd").has_value());
}

TEST(ToolConfig, RejectsAnotherSchemaVersion) {
  nlohmann::json j = ToolConfig{};
  j["schema_version"] = kToolConfigSchemaVersion + 1;
  auto back = parse_tool_config(j.dump());
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("schema_version"), std::string::npos);
  EXPECT_NE(back.status().message().find("different builds"), std::string::npos);
}

TEST(ToolConfig, RejectsUnknownEnumValue) {
  nlohmann::json j = ToolConfig{};
  j["replay_mode"] = "sideways";
  auto back = parse_tool_config(j.dump());
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("replay_mode: unknown value \"sideways\""),
            std::string::npos);
}

TEST(ToolConfig, RejectsMissingField) {
  nlohmann::json j = ToolConfig{};
  j.erase("filters");
  auto back = parse_tool_config(j.dump());
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("filters"), std::string::npos);
  EXPECT_EQ(back.status().message().find("[json.exception"), std::string::npos);
}

TEST(ToolConfig, RejectsPassNamingMissingGroup) {
  ToolConfig c;
  c.pmc_groups = {{"a"}};
  c.passes = {{PassKind::kCounters, 3, false}};
  auto back = parse_tool_config(serialize_tool_config(c));
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("counter group 3 does not exist"), std::string::npos);
}

TEST(ToolConfig, RejectsMalformedJson) {
  auto back = parse_tool_config("{\"schema_version\": ");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(back.status().message().find(kToolConfigEnv), std::string::npos);
}

TEST(ToolConfigEnv, InlineValue) {
  ToolConfig c = full_config();
  auto value = tool_config_inline_value(c);
  ASSERT_TRUE(value.has_value());
  auto back = load_tool_config_from_value("  " + *value);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, c);
}

TEST(ToolConfigEnv, InlineValueRefusesHugeConfigs) {
  ToolConfig c;
  c.command.assign(10000, std::string(20, 'x'));
  EXPECT_FALSE(tool_config_inline_value(c).has_value());
}

TEST(ToolConfigEnv, AtFile) {
  ToolConfig c = full_config();
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("kreplay_tool_config_" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(path);
    out << serialize_tool_config(c);
  }
  auto back = load_tool_config_from_value("@" + path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, c);
}

TEST(ToolConfigEnv, AtMissingFileIsClear) {
  auto back = load_tool_config_from_value("@/nonexistent/kreplay/config.json");
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("cannot read /nonexistent/kreplay/config.json"),
            std::string::npos);
}

TEST(ToolConfigEnv, AtNothingIsClear) {
  auto back = load_tool_config_from_value("@");
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("names no file"), std::string::npos);
}

TEST(ToolConfigEnv, NeitherJsonNorFileIsClear) {
  auto back = load_tool_config_from_value("kernel");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(back.status().message().find("neither inline JSON nor @/path/to/file.json"),
            std::string::npos);
}

TEST(ToolConfigEnv, FromEnvironment) {
  ::unsetenv(kToolConfigEnv);
  auto unset = load_tool_config_from_env();
  ASSERT_FALSE(unset.ok());
  EXPECT_EQ(unset.status().code(), KREPLAY_STATUS_ERROR_NOT_AVAILABLE);
  EXPECT_NE(unset.status().message().find("is not set"), std::string::npos);

  ToolConfig c = full_config();
  ::setenv(kToolConfigEnv, serialize_tool_config(c).c_str(), 1);
  auto set = load_tool_config_from_env();
  ::unsetenv(kToolConfigEnv);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(*set, c);
}

}  // namespace
}  // namespace kreplay::config
