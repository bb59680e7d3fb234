// Pins: input files in JSON and YAML (the same jobs either way), every job key, file:line:column
// on syntax errors and on bad keys or values, unknown keys with suggestions, and the structural
// errors (no jobs, empty jobs, wrong types).
#include "cli/input_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

namespace kreplay::cli {
namespace {

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

InputFile json_ok(std::string_view text) {
  auto r = parse_input_text(text, InputFormat::kJson, "jobs.json");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : InputFile{};
}

InputFile yaml_ok(std::string_view text) {
  auto r = parse_input_text(text, InputFormat::kYaml, "jobs.yaml");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : InputFile{};
}

std::string json_error(std::string_view text) {
  auto r = parse_input_text(text, InputFormat::kJson, "jobs.json");
  EXPECT_FALSE(r.ok()) << "parsed: " << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
  return r.status().message();
}

std::string yaml_error(std::string_view text) {
  auto r = parse_input_text(text, InputFormat::kYaml, "jobs.yaml");
  EXPECT_FALSE(r.ok()) << "parsed: " << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
  return r.status().message();
}

// Every job key, in JSON and in YAML.
constexpr const char* kAllKeysJson = R"({
  "$schema": "../share/kreplay/input-schema.json",
  "job_replay_mode": "application",
  "jobs": [
    {
      "name": "everything",
      "pmc": ["sm__cycles_elapsed.avg", "smsp__inst_executed.sum"],
      "metrics": ["m1", "m2"],
      "replay_mode": "kernel",
      "range_markers": "",
      "replay_memory": "args",
      "kernel_replay_beta_enabled": true,
      "kernel_include_regex": "gemm",
      "kernel_exclude_regex": "naive",
      "kernel_name": "regex:^g",
      "kernel_iteration_range": "[1-3, 5]",
      "launch_skip": 10,
      "launch_count": 5,
      "output_directory": "out/%rank%",
      "output_file": "run_%pid%",
      "output_format": ["csv", "json"],
      "output_gzip": true,
      "kernel_trace": true,
      "summary": false,
      "log_level": "debug"
    },
    {"pmc_groups": [["a", "b"], ["c"]], "pmc_group_interval": 3},
    {"timing_pass": true, "timing_pass_flush_cache": true}
  ]
})";

constexpr const char* kAllKeysYaml = R"(
$schema: ../share/kreplay/input-schema.json
job_replay_mode: application
jobs:
  - name: everything
    pmc: [sm__cycles_elapsed.avg, smsp__inst_executed.sum]
    metrics: m1,m2
    replay_mode: kernel
    range_markers: ""
    replay_memory: args
    kernel_replay_beta_enabled: yes
    kernel_include_regex: gemm
    kernel_exclude_regex: naive
    kernel_name: "regex:^g"
    kernel_iteration_range: "[1-3, 5]"
    launch_skip: 10
    launch_count: 5
    output_directory: out/%rank%
    output_file: run_%pid%
    output_format: csv json
    output_gzip: true
    kernel_trace: true
    summary: false
    log_level: debug
  - pmc_groups:
      - [a, b]
      - c
    pmc_group_interval: 3
  - timing_pass: true
    timing_pass_flush_cache: on
)";

void expect_all_keys(const InputFile& f) {
  EXPECT_EQ(f.job_replay_mode, JobReplayMode::kApplication);
  EXPECT_TRUE(f.job_replay_mode_given);
  ASSERT_EQ(f.jobs.size(), 3u);
  const JobSpec& j = f.jobs[0];
  const RunSettings& s = j.settings;
  EXPECT_EQ(j.name, "everything");
  EXPECT_EQ(j.pmc, (std::vector<std::string>{"sm__cycles_elapsed.avg", "smsp__inst_executed.sum"}));
  EXPECT_EQ(s.metrics, (std::vector<std::string>{"m1", "m2"}));
  EXPECT_EQ(s.replay_mode, ReplayMode::kKernel);
  EXPECT_EQ(s.range_markers, "");
  EXPECT_EQ(s.replay_memory, ReplayMemory::kArgs);
  EXPECT_EQ(s.kernel_include_regex, "gemm");
  EXPECT_EQ(s.kernel_exclude_regex, "naive");
  EXPECT_EQ(s.kernel_name, "regex:^g");
  EXPECT_EQ(s.kernel_iteration_range, "[1-3, 5]");
  EXPECT_EQ(s.launch_skip, 10u);
  EXPECT_EQ(s.launch_count, 5u);
  EXPECT_EQ(s.output_directory, "out/%rank%");
  EXPECT_EQ(s.output_file, "run_%pid%");
  EXPECT_EQ(s.output_format, (std::vector<OutputFormat>{OutputFormat::kCsv, OutputFormat::kJson}));
  EXPECT_EQ(s.output_gzip, true);
  EXPECT_EQ(s.kernel_trace, true);
  EXPECT_EQ(s.summary, false);  // given as false: set, and false
  EXPECT_EQ(s.log_level, "debug");
  EXPECT_EQ(j.keys.size(), 20u);

  const JobSpec& r = f.jobs[1];
  EXPECT_EQ(r.pmc_groups, (std::vector<std::vector<std::string>>{{"a", "b"}, {"c"}}));
  EXPECT_EQ(r.pmc_group_interval, 3u);
  EXPECT_EQ(r.settings, RunSettings{});  // nothing else given

  const JobSpec& t = f.jobs[2];
  EXPECT_EQ(t.timing_pass, true);
  EXPECT_EQ(t.timing_pass_flush_cache, true);
  EXPECT_FALSE(t.pmc.has_value());
  EXPECT_FALSE(t.settings.kernel_trace.has_value());  // a default never counts as given
}

TEST(InputFile, EveryKeyJson) {
  expect_all_keys(json_ok(kAllKeysJson));
}
TEST(InputFile, EveryKeyYaml) {
  expect_all_keys(yaml_ok(kAllKeysYaml));
}

TEST(InputFile, JsonAndYamlAgree) {
  InputFile j = json_ok(kAllKeysJson);
  InputFile y = yaml_ok(kAllKeysYaml);
  ASSERT_EQ(j.jobs.size(), y.jobs.size());
  for (size_t i = 0; i < j.jobs.size(); ++i) {
    EXPECT_EQ(j.jobs[i].settings, y.jobs[i].settings) << i;
    EXPECT_EQ(j.jobs[i].pmc, y.jobs[i].pmc) << i;
    EXPECT_EQ(j.jobs[i].pmc_groups, y.jobs[i].pmc_groups) << i;
    EXPECT_EQ(j.jobs[i].timing_pass, y.jobs[i].timing_pass) << i;
    EXPECT_EQ(j.jobs[i].keys, y.jobs[i].keys) << i;
  }
}

TEST(InputFile, JobReplayMode) {
  EXPECT_EQ(json_ok(R"({"jobs": [{}]})").job_replay_mode, JobReplayMode::kApplication);
  EXPECT_FALSE(json_ok(R"({"jobs": [{}]})").job_replay_mode_given);
  InputFile k = yaml_ok("job_replay_mode: kernel\njobs:\n  - pmc: A\n");
  EXPECT_EQ(k.job_replay_mode, JobReplayMode::kKernel);
  EXPECT_EQ(k.job_replay_mode_mark.line, 1);
  std::string m = yaml_error("job_replay_mode: kernal\njobs: [{pmc: A}]\n");
  EXPECT_HAS(m, "jobs.yaml:1:1: job_replay_mode: unknown value \"kernal\"");
  EXPECT_HAS(m, "use application or kernel (did you mean kernel?)");
}

TEST(InputFile, NamesAsStringsOrLists) {
  InputFile f = yaml_ok("jobs:\n  - pmc: A B,C\n  - pmc: [\"D,E\", F]\n");
  EXPECT_EQ(f.jobs[0].pmc, (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(f.jobs[1].pmc, (std::vector<std::string>{"D", "E", "F"}));
}

TEST(InputFile, IterationRangeForms) {
  // YAML reads [1-3, 5] as a flow list; it is put back together.
  InputFile f = yaml_ok(
      "jobs:\n  - kernel_iteration_range: [1-3, 5, [7-8]]\n"
      "  - kernel_iteration_range: 3\n");
  EXPECT_EQ(f.jobs[0].settings.kernel_iteration_range, "[1-3, 5, [7-8]]");
  EXPECT_EQ(f.jobs[1].settings.kernel_iteration_range, "3");
  InputFile j = json_ok(R"({"jobs": [{"kernel_iteration_range": 4}]})");
  EXPECT_EQ(j.jobs[0].settings.kernel_iteration_range, "4");
}

TEST(InputFile, MarksPointAtKeys) {
  InputFile f = yaml_ok("jobs:\n  - pmc: A\n    launch_skip: 3\n");
  EXPECT_EQ(f.where(f.jobs[0], "launch_skip"), "jobs.yaml:3:5: jobs[0].launch_skip");
  InputFile j = json_ok("{\"jobs\": [\n  {\"pmc\": [\"A\"],\n   \"launch_skip\": 3}]}");
  EXPECT_EQ(j.where(j.jobs[0], "launch_skip"), "jobs.json:3:4: jobs[0].launch_skip");
  EXPECT_EQ(j.where(j.jobs[0]), "jobs.json:2:3: jobs[0]");
  EXPECT_EQ(j.job_label(j.jobs[0]), "job 1");
}

// ----- syntax errors: file:line:column ---------------------------------------------------------

TEST(InputFileErrors, JsonSyntaxHasLineAndColumn) {
  std::string m = json_error("{\n  \"jobs\": [\n    {\"pmc\": [\"A\",]}\n  ]\n}");
  EXPECT_HAS(m, "jobs.json:3:18: ");
  EXPECT_HAS(m, "syntax error");
  EXPECT_EQ(m.find("[json.exception"), std::string::npos) << m;
  m = json_error("{\"jobs\": [{}]");
  EXPECT_HAS(m, "jobs.json:1:");
  EXPECT_HAS(m, "unexpected end of input");
  m = json_error("{\"jobs\": [{}]} trailing");
  EXPECT_HAS(m, "jobs.json:1:18: ");  // nlohmann reads "tra" before it gives up
}

TEST(InputFileErrors, YamlSyntaxHasLineAndColumn) {
  std::string m = yaml_error("jobs:\n  - pmc: [A, B\n  - pmc: C\n");
  EXPECT_TRUE(std::regex_search(m, std::regex(R"(^jobs\.yaml:\d+:\d+: .+; fix the YAML syntax$)")))
      << m;
  m = yaml_error("jobs:\n  - pmc: A\n bad indent: [\n");
  EXPECT_TRUE(std::regex_search(m, std::regex(R"(^jobs\.yaml:[23]:\d+: )"))) << m;
}

TEST(InputFileErrors, DuplicateKeys) {
  EXPECT_HAS(json_error(R"({"jobs": [{"pmc": ["A"], "pmc": ["B"]}]})"),
             "jobs.json:1:26: duplicate key \"pmc\"");
  EXPECT_HAS(yaml_error("jobs:\n  - pmc: A\n    pmc: B\n"), "jobs.yaml:3:5: duplicate key \"pmc\"");
}

// ----- structure --------------------------------------------------------------------------------

TEST(InputFileErrors, NoJobs) {
  EXPECT_HAS(json_error(R"({"job_replay_mode": "kernel"})"), "jobs.json:1:1: no jobs list");
  EXPECT_HAS(json_error(R"({"jobs": []})"), "jobs.json:1:2: jobs: the list is empty");
  EXPECT_HAS(yaml_error("jobs: []\n"), "jobs.yaml:1:1: jobs: the list is empty");
  EXPECT_HAS(yaml_error(""), "jobs.yaml: the file is empty");
  EXPECT_HAS(yaml_error("jobs:\n"), "jobs: expected a list of jobs, found nothing");
  EXPECT_HAS(json_error(R"({"jobs": {"pmc": ["A"]}})"),
             "jobs: expected a list of jobs, found a mapping");
  EXPECT_HAS(json_error(R"([{"pmc": ["A"]}])"), "the top level is a list");
  EXPECT_HAS(yaml_error("- pmc: A\n"), "the top level is a list");
  EXPECT_HAS(json_error(R"({"jobs": ["pmc"]})"),
             "jobs[0]: expected a mapping of options, found \"pmc\"");
}

TEST(InputFileErrors, UnknownKeysSuggest) {
  std::string m = yaml_error("jobs:\n  - pmcs: [A]\n");
  EXPECT_HAS(m, "jobs.yaml:2:5: jobs[0].pmcs: unknown key (did you mean pmc?)");
  m = json_error(R"({"jobs": [{"pmcs": ["A"]}]})");
  EXPECT_HAS(m, "jobs.json:1:12: jobs[0].pmcs: unknown key (did you mean pmc?)");
  m = yaml_error("jobs:\n  - kernel_include_regx: g\n");
  EXPECT_HAS(m, "did you mean kernel_include_regex?");
  m = yaml_error("jobs:\n  - timing_pass_flush: true\n");
  EXPECT_HAS(m, "did you mean timing_pass_flush_cache?");
  m = yaml_error("jobs:\n  - stats: true\n");
  EXPECT_HAS(m, "kreplay calls it summary");
  m = yaml_error("jobs:\n  - advanced_thread_trace: true\n");
  EXPECT_HAS(m, "timing_pass: true");
  m = yaml_error("job: []\n");
  EXPECT_HAS(m, "unknown top-level key \"job\" (did you mean jobs?)");
  m = yaml_error("pmc: [A]\njobs: [{}]\n");
  EXPECT_HAS(m, "job options go inside a job of the jobs list");
}

TEST(InputFileErrors, TypesAndValuesNameKeyAndPosition) {
  EXPECT_HAS(yaml_error("jobs:\n  - launch_skip: ten\n"),
             "jobs.yaml:2:5: jobs[0].launch_skip: expected a non-negative integer, found \"ten\"");
  EXPECT_HAS(json_error(R"({"jobs": [{"launch_skip": -1}]})"),
             "jobs[0].launch_skip: expected a non-negative integer, found the number -1");
  EXPECT_HAS(json_error(R"({"jobs": [{"launch_count": 0}]})"),
             "jobs[0].launch_count: must be at least 1, found 0");
  EXPECT_HAS(json_error(R"({"jobs": [{"pmc_group_interval": 0, "pmc_groups": [["a"]]}]})"),
             "pmc_group_interval: must be at least 1");
  EXPECT_HAS(json_error(R"({"jobs": [{"kernel_trace": "yes"}]})"),
             "jobs[0].kernel_trace: expected true or false, found \"yes\"");
  EXPECT_HAS(json_error(R"({"jobs": [{"output_directory": true}]})"),
             "jobs[0].output_directory: expected a string, found true");
  EXPECT_HAS(json_error(R"({"jobs": [{"output_directory": ""}]})"),
             "jobs[0].output_directory: is empty");
  EXPECT_HAS(json_error(R"({"jobs": [{"pmc": []}]})"), "jobs[0].pmc: no counter given");
  EXPECT_HAS(json_error(R"({"jobs": [{"pmc": [1, {"a": 1}]}]})"),
             "jobs[0].pmc[1]: expected a name, found a mapping");
  EXPECT_HAS(json_error(R"({"jobs": [{"pmc_groups": "A"}]})"),
             "jobs[0].pmc_groups: expected a non-empty list of counter groups");
  EXPECT_HAS(json_error(R"({"jobs": [{"pmc_groups": [["A"], []]}]})"),
             "jobs[0].pmc_groups[1]: no counter given");
  EXPECT_HAS(
      json_error(R"({"jobs": [{"replay_mode": "kernal"}]})"),
      "jobs[0].replay_mode: unknown value \"kernal\"; use kernel, auto, application or range");
  EXPECT_HAS(json_error(R"({"jobs": [{"replay_memory": "none"}]})"),
             "jobs[0].replay_memory: unknown value \"none\"; use all or args");
  EXPECT_HAS(json_error(R"({"jobs": [{"cache_control": "some"}]})"),
             "jobs[0].cache_control: unknown value \"some\"; use all or none");
  EXPECT_HAS(json_error(R"({"jobs": [{"clock_control": "base"}]})"),
             "kreplay never changes clocks on a shared GPU");
  EXPECT_HAS(json_error(R"({"jobs": [{"output_format": ["csv", "pdf"]}]})"),
             "jobs[0].output_format: unknown value \"pdf\"");
  EXPECT_HAS(json_error(R"({"jobs": [{"log_level": "loud"}]})"),
             "jobs[0].log_level: unknown value");
  EXPECT_HAS(json_error(R"({"jobs": [{"range_markers": "nvtx"}]})"),
             "jobs[0].range_markers: unknown markers");
  EXPECT_HAS(json_error(R"({"jobs": [{"kernel_replay_beta_enabled": "sure"}]})"),
             "kernel_replay_beta_enabled: expected true or false");
}

TEST(InputFileErrors, FiltersAndNamesCheckedWithPosition) {
  std::string m = yaml_error("jobs:\n  - pmc: A\n    kernel_include_regex: \"gemm(\"\n");
  EXPECT_HAS(m,
             "jobs.yaml:3:5: jobs[0].kernel_include_regex \"gemm(\" is not a valid regular "
             "expression");
  m = yaml_error("jobs:\n  - kernel_iteration_range: \"[1-\"\n");
  EXPECT_HAS(m, "jobs.yaml:2:5: jobs[0].kernel_iteration_range: bad kernel iteration range");
  m = yaml_error("jobs:\n  - kernel_name: \"regex:\"\n");
  EXPECT_HAS(m, "jobs[0].kernel_name: --kernel-name \"regex:\" has no expression");
  m = yaml_error("jobs:\n  - output_file: \"%host%\"\n");
  EXPECT_HAS(m, "jobs[0].output_file: output name \"%host%\": unknown token %host%");
}

TEST(InputFileErrors, AliasBombAndDeepNestingAreRefused) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'h'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = c;
  }
  bomb += "jobs: [{}]\n";
  EXPECT_HAS(yaml_error(bomb), "more than");
  std::string deep = "{\"jobs\": " + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_HAS(json_error(deep), "nested more than 64 levels deep");
  std::string deep_yaml = "jobs: " + std::string(100, '[') + std::string(100, ']') + "\n";
  EXPECT_HAS(yaml_error(deep_yaml), "nested more than 64 levels deep");
}

TEST(InputFileErrors, TextMustBeUtf8) {
  EXPECT_HAS(yaml_error("jobs:\n  - pmc: \"A\xcd\x00B\"\n"),
             "jobs.yaml:2:10: the text is not valid UTF-8");
  EXPECT_HAS(yaml_error("jobs:\n  - \xff: 1\n"), "jobs.yaml:2:5: the text is not valid UTF-8");
  EXPECT_HAS(json_error("{\"jobs\": [{\"pmc\": [\"\xff\"]}]}"), "jobs.json:1:");
  EXPECT_EQ(yaml_ok("jobs:\n  - name: \"caf\xc3\xa9 \xe2\x9c\x93\"\n").jobs[0].name,
            "caf\xc3\xa9 \xe2\x9c\x93");
}

TEST(InputFileErrors, UserTextInMessagesStaysOnOneLine) {
  std::string m = yaml_error("jobs:\n  - \"bad\\nkey\": 1\n");
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  m = json_error("{\"jobs\": [{\"replay_mode\": \"a\\nb\"}]}");
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

// ----- files -----------------------------------------------------------------------------------

class InputFileOnDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kreplay_input_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(InputFileOnDisk, FormatFromExtensionOrContent) {
  for (const char* name : {"a.json", "a.JSON", "a.yaml", "a.yml", "a.txt", "noext"}) {
    auto r = load_input_file(write(name, R"({"jobs": [{"pmc": ["A"]}]})"));
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().message();
    EXPECT_EQ(r->jobs[0].pmc, (std::vector<std::string>{"A"}));
  }
  auto y = load_input_file(write("b.input", "jobs:\n  - pmc: A\n"));
  ASSERT_TRUE(y.ok()) << y.status().message();
  // A .json file is parsed strictly as JSON.
  auto strict = load_input_file(write("c.json", "jobs:\n  - pmc: A\n"));
  ASSERT_FALSE(strict.ok());
  EXPECT_HAS(strict.status().message(), "c.json:1:1: ");
}

TEST_F(InputFileOnDisk, MissingFile) {
  auto r = load_input_file((dir_ / "nope.yaml").string());
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.status().message(), "cannot read input file");
  EXPECT_HAS(r.status().message(), "No such file or directory");
}

// Issue 12: a job may set cache_control (all|none) and clock_control (none only).
TEST(InputFile, CacheAndClockControl) {
  InputFile f = json_ok(R"({"jobs": [{"cache_control": "none", "clock_control": "none"},
                                     {"cache_control": "all"}, {}]})");
  ASSERT_EQ(f.jobs.size(), 3u);
  EXPECT_EQ(f.jobs[0].settings.cache_control, CacheControl::kNone);
  EXPECT_EQ(f.jobs[1].settings.cache_control, CacheControl::kAll);
  EXPECT_FALSE(f.jobs[2].settings.cache_control.has_value());
  EXPECT_FALSE(f.jobs[2].settings.check_divergence.has_value());
  EXPECT_EQ(json_ok(R"({"jobs": [{"check_divergence": true}]})").jobs[0].settings.check_divergence,
            true);
  InputFile y = yaml_ok("jobs:\n  - cache_control: none\n");
  ASSERT_EQ(y.jobs.size(), 1u);
  EXPECT_EQ(y.jobs[0].settings.cache_control, CacheControl::kNone);
}
}  // namespace
}  // namespace kreplay::cli
