// Pins: share/kreplay/input-schema.json documents exactly what the parser accepts. The schema is
// documentation only (kreplay checks files itself), so this test keeps the two from drifting:
// the enums, the top-level keys and the job keys must equal the constants the code exports, and
// every job key must have a description. It also parses the schema's own examples of each key.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/input_file.hpp"
#include "config/tool_config.hpp"

#ifndef KREPLAY_INPUT_SCHEMA_PATH
#error "KREPLAY_INPUT_SCHEMA_PATH must name share/kreplay/input-schema.json"
#endif

namespace kreplay::cli {

using config::kCacheControlNames;
using config::kClockControlNames;
using config::kGraphProfilingNames;
using config::kLogLevelNames;
using config::kOutputFormatNames;
using config::kReplayMemoryNames;
using config::kReplayModeNames;

namespace {

using nlohmann::json;

json load_schema() {
  std::ifstream in(KREPLAY_INPUT_SCHEMA_PATH);
  EXPECT_TRUE(in.good()) << "cannot open " << KREPLAY_INPUT_SCHEMA_PATH;
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

template <size_t N>
std::vector<std::string> list(const std::array<std::string_view, N>& names) {
  return std::vector<std::string>(names.begin(), names.end());
}

std::vector<std::string> strings(const json& array) {
  std::vector<std::string> out;
  for (const auto& item : array) out.push_back(item.get<std::string>());
  return out;
}

std::set<std::string> keys(const json& object) {
  std::set<std::string> out;
  for (const auto& [key, value] : object.items()) out.insert(key);
  return out;
}

TEST(InputSchema, JobReplayModeEnumMatchesParser) {
  json schema = load_schema();
  const json& prop = schema.at("properties").at("job_replay_mode");
  EXPECT_EQ(strings(prop.at("enum")), list(kJobReplayModeNames));
  EXPECT_EQ(prop.at("default"), "application");
  for (const auto& name : kJobReplayModeNames) EXPECT_TRUE(parse_job_replay_mode(name));
}

TEST(InputSchema, JobEnumsMatchParser) {
  json job = load_schema().at("definitions").at("job").at("properties");
  EXPECT_EQ(strings(job.at("replay_mode").at("enum")), list(kReplayModeNames));
  EXPECT_EQ(strings(job.at("replay_memory").at("enum")), list(kReplayMemoryNames));
  EXPECT_EQ(strings(job.at("graph_profiling").at("enum")), list(kGraphProfilingNames));
  EXPECT_EQ(strings(job.at("cache_control").at("enum")), list(kCacheControlNames));
  EXPECT_EQ(strings(job.at("clock_control").at("enum")), list(kClockControlNames));
  EXPECT_EQ(strings(job.at("output_format").at("oneOf")[0].at("items").at("enum")),
            list(kOutputFormatNames));
  EXPECT_EQ(strings(job.at("log_level").at("enum")), list(kLogLevelNames));
}

TEST(InputSchema, KeysMatchParser) {
  json schema = load_schema();
  std::vector<std::string> top = list(kTopLevelKeys);
  EXPECT_EQ(keys(schema.at("properties")), std::set<std::string>(top.begin(), top.end()));
  EXPECT_EQ(schema.at("additionalProperties"), false);
  const json& job = schema.at("definitions").at("job");
  EXPECT_EQ(job.at("additionalProperties"), false);
  std::vector<std::string> accepted = list(kJobKeys);
  EXPECT_EQ(keys(job.at("properties")), std::set<std::string>(accepted.begin(), accepted.end()));
}

TEST(InputSchema, EveryJobKeyIsDescribed) {
  json job = load_schema().at("definitions").at("job").at("properties");
  for (const auto& [key, value] : job.items()) {
    ASSERT_TRUE(value.contains("description")) << key;
    EXPECT_GT(value.at("description").get<std::string>().size(), 20u) << key;
  }
}

// Each key the schema documents is one the parser takes (a file using it is not rejected for
// an unknown key).
TEST(InputSchema, EveryDocumentedKeyParses) {
  json job = load_schema().at("definitions").at("job").at("properties");
  const std::map<std::string, std::string> sample = {{"pmc", R"(["A"])"},
                                                     {"pmc_groups", R"([["A"]])"},
                                                     {"pmc_group_interval", "2"},
                                                     {"metrics", R"(["m"])"},
                                                     {"set", R"("basic")"},
                                                     {"section", R"(["SpeedOfLight"])"},
                                                     {"section_folder", R"("sections")"},
                                                     {"timing_pass", "true"},
                                                     {"timing_pass_flush_cache", "true"},
                                                     {"pc_sampling", "true"},
                                                     {"pc_sampling_period", "7"},
                                                     {"sass_metrics", R"(["s"])"},
                                                     {"source_counters", "true"},
                                                     {"pm_sampling", R"(["p"])"},
                                                     {"pm_sampling_interval", "100"},
                                                     {"replay_mode", R"("kernel")"},
                                                     {"range_markers", R"("nvtx:x")"},
                                                     {"replay_memory", R"("args")"},
                                                     {"graph_profiling", R"("graph")"},
                                                     {"cache_control", R"("none")"},
                                                     {"snapshot", R"("write-set")"},
                                                     {"clock_control", R"("none")"},
                                                     {"check_divergence", "true"},
                                                     {"kernel_replay_beta_enabled", "true"},
                                                     {"kernel_include_regex", R"("g")"},
                                                     {"kernel_exclude_regex", R"("g")"},
                                                     {"kernel_name", R"("g")"},
                                                     {"kernel_iteration_range", R"("[1-2]")"},
                                                     {"launch_skip", "1"},
                                                     {"launch_count", "1"},
                                                     {"nvtx_include", R"(["step/", "A,B"])"},
                                                     {"nvtx_exclude", R"("warmup/")"},
                                                     {"profile_from_start", R"("off")"},
                                                     {"kernel_id", R"("::g:2")"},
                                                     {"kernel_name_base", R"("mangled")"},
                                                     {"output_directory", R"("d")"},
                                                     {"output_file", R"("f")"},
                                                     {"output_format", R"(["csv"])"},
                                                     {"output_gzip", "true"},
                                                     {"kernel_trace", "true"},
                                                     {"summary", "true"},
                                                     {"log_level", R"("info")"},
                                                     {"name", R"("n")"}};
  for (const auto& [key, value] : job.items()) {
    auto it = sample.find(key);
    ASSERT_NE(it, sample.end()) << "no sample value for " << key;
    std::string text = "{\"jobs\": [{\"" + key + "\": " + it->second + "}]}";
    auto parsed = parse_input_text(text, InputFormat::kJson, "schema.json");
    EXPECT_TRUE(parsed.ok()) << key << ": " << parsed.status().message();
  }
}

}  // namespace
}  // namespace kreplay::cli
