// Pins: every command-line option, the "--" split, and each error: unknown option with a
// suggestion, bad values, conflicts, missing application; --help and --version.
#include "cli/options.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "kreplay/kreplay.h"

namespace kreplay::cli {
namespace {

Result<CliOptions> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "kreplay");
  return parse_command_line(args);
}

CliOptions ok(std::vector<std::string> args) {
  auto r = parse(args);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : CliOptions{};
}

std::string fails(std::vector<std::string> args) {
  auto r = parse(args);
  EXPECT_FALSE(r.ok()) << "parsed";
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("==KREPLAY=="), std::string::npos);
  return r.status().message();
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(Options, ApplicationAfterDoubleDash) {
  CliOptions o = ok({"--kernel-trace", "--", "./app", "--pmc", "x", "--", "-k"});
  EXPECT_EQ(o.command, (std::vector<std::string>{"./app", "--pmc", "x", "--", "-k"}));
  EXPECT_TRUE(o.pmc.empty());  // the application's --pmc is the application's
  EXPECT_EQ(o.settings.kernel_trace, true);
}

TEST(Options, ArgcArgvEntryPoint) {
  const char* argv[] = {"kreplay", "--pmc", "A", "--", "./app"};
  auto r = parse_command_line(5, argv);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->pmc, (std::vector<std::vector<std::string>>{{"A"}}));
  EXPECT_EQ(r->command, (std::vector<std::string>{"./app"}));
}

TEST(Options, PmcGroupsOnePerFlag) {
  CliOptions o = ok({"--pmc", "A", "B", "--pmc", "C,D", "--pmc=E", "--", "./app"});
  EXPECT_EQ(o.pmc, (std::vector<std::vector<std::string>>{{"A", "B"}, {"C", "D"}, {"E"}}));
}

TEST(Options, Metrics) {
  CliOptions o = ok({"--metrics", "a,b", "--metrics", "c", "--", "./app"});
  EXPECT_EQ(o.settings.metrics, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(Options, NothingGivenMeansNothingSet) {
  CliOptions o = ok({"--", "./app"});
  EXPECT_EQ(o.settings, RunSettings{});  // no default counts as set
  EXPECT_TRUE(o.pmc.empty());
  EXPECT_FALSE(o.input_file.has_value());
  EXPECT_FALSE(o.kernel_replay_beta_enabled);
}

TEST(Options, ReplayOptions) {
  CliOptions o = ok({"--replay-mode", "range", "--range-markers", "nvtx:step", "--replay-memory",
                     "args", "--kernel-replay-beta-enabled", "--", "./app"});
  EXPECT_EQ(o.settings.replay_mode, ReplayMode::kRange);
  EXPECT_EQ(o.settings.range_markers, "nvtx:step");
  EXPECT_EQ(o.settings.replay_memory, ReplayMemory::kArgs);
  EXPECT_TRUE(o.kernel_replay_beta_enabled);
  EXPECT_EQ(ok({"--replay-mode", "kernel", "--", "a"}).settings.replay_mode, ReplayMode::kKernel);
  EXPECT_EQ(ok({"--replay-mode", "application", "--", "a"}).settings.replay_mode,
            ReplayMode::kApplication);
  EXPECT_EQ(ok({"--range-markers", "cuda-profiler", "--", "a"}).settings.range_markers,
            "cuda-profiler");
}

TEST(Options, Rocprofv3CommandLineWorksUnchanged) {
  CliOptions o = ok({"--pmc", "SQ_WAVES", "GRBM_COUNT", "--pmc", "GRBM_GUI_ACTIVE", "--replay-mode",
                     "kernel", "--kernel-replay-beta-enabled", "--", "./app"});
  EXPECT_EQ(o.pmc.size(), 2u);
  EXPECT_EQ(o.settings.replay_mode, ReplayMode::kKernel);
}

TEST(Options, KernelSelection) {
  CliOptions o = ok({"--kernel-include-regex", "gemm", "--kernel-exclude-regex", "naive", "-k",
                     "regex:^g", "--kernel-iteration-range", "[1-3, 5]", "--launch-skip", "10",
                     "--launch-count", "5", "--", "./app"});
  EXPECT_EQ(o.settings.kernel_include_regex, "gemm");
  EXPECT_EQ(o.settings.kernel_exclude_regex, "naive");
  EXPECT_EQ(o.settings.kernel_name, "regex:^g");
  EXPECT_EQ(o.settings.kernel_iteration_range, "[1-3, 5]");
  EXPECT_EQ(o.settings.launch_skip, 10u);
  EXPECT_EQ(o.settings.launch_count, 5u);
  EXPECT_EQ(ok({"--kernel-name", "gemm", "--", "a"}).settings.kernel_name, "gemm");
}

TEST(Options, Output) {
  CliOptions o =
      ok({"-d", "out/%rank%", "-o", "run_%p", "--output-format", "csv,json", "--output-format",
          "perfetto", "--kernel-trace", "--summary", "--output-gzip", "--", "./app"});
  EXPECT_EQ(o.settings.output_directory, "out/%rank%");
  EXPECT_EQ(o.settings.output_file, "run_%p");
  EXPECT_EQ(o.settings.output_format,
            (std::vector<OutputFormat>{OutputFormat::kCsv, OutputFormat::kJson,
                                       OutputFormat::kPerfetto}));
  EXPECT_EQ(o.settings.kernel_trace, true);
  EXPECT_EQ(o.settings.summary, true);
  EXPECT_EQ(o.settings.output_gzip, true);
  CliOptions s = ok({"-S", "--output-directory", "d", "--output-file", "f", "--", "./app"});
  EXPECT_EQ(s.settings.summary, true);
  EXPECT_EQ(s.settings.output_directory, "d");
  EXPECT_EQ(s.settings.output_file, "f");
  EXPECT_EQ(ok({"--output-format", "sqlite,sqlite", "--", "a"}).settings.output_format,
            (std::vector<OutputFormat>{OutputFormat::kSqlite}));
}

TEST(Options, InputFile) {
  EXPECT_EQ(ok({"-i", "jobs.yaml", "--", "./app"}).input_file, "jobs.yaml");
  EXPECT_EQ(ok({"--input", "jobs.json", "--", "./app"}).input_file, "jobs.json");
}

TEST(Options, Discovery) {
  CliOptions l = ok({"--list-avail"});
  EXPECT_TRUE(l.list_avail);
  EXPECT_TRUE(l.command.empty());
  CliOptions lc = ok({"--list-avail", "--chip", "GH100"});
  EXPECT_EQ(lc.chip, "GH100");
  CliOptions p = ok({"--pmc-check", "A", "B,C", "--chip", "GH100"});
  EXPECT_EQ(p.pmc_check, (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(p.chip, "GH100");
}

TEST(Options, General) {
  EXPECT_EQ(ok({"--log-level", "debug", "--", "a"}).settings.log_level, "debug");
  EXPECT_EQ(ok({"--log-level", "3", "--", "a"}).settings.log_level, "3");
  CliOptions q = ok({"-q", "--", "a"});
  EXPECT_TRUE(q.quiet);
  EXPECT_EQ(q.settings.log_level, "quiet");
  EXPECT_TRUE(ok({"--quiet", "--", "a"}).quiet);
}

TEST(Options, VersionAndHelpWinOverEverything) {
  CliOptions v = ok({"--version", "--bogus"});
  EXPECT_TRUE(v.show_version);
  EXPECT_EQ(version_text(), "kreplay " KREPLAY_VERSION_STRING);
  CliOptions h = ok({"--pmc", "A", "--help"});
  EXPECT_TRUE(h.show_help);
  EXPECT_TRUE(ok({"-h"}).show_help);
  EXPECT_EQ(h.help_text, help_text());
}

TEST(Options, HelpReadsWell) {
  std::string h = help_text();
  EXPECT_HAS(h, "Usage: kreplay [OPTIONS] -- APP [ARGS...]");
  for (const char* group : {"Counters:", "Replay:", "Kernel selection:", "Output:", "Input files:",
                            "Counter discovery (no application):", "General:", "Examples:"}) {
    EXPECT_HAS(h, group);
  }
  for (const char* option : {"--pmc",
                             "--metrics",
                             "--replay-mode",
                             "--range-markers",
                             "--replay-memory",
                             "--kernel-replay-beta-enabled",
                             "--kernel-include-regex",
                             "--kernel-exclude-regex",
                             "--kernel-name",
                             "--kernel-iteration-range",
                             "--launch-skip",
                             "--launch-count",
                             "--output-directory",
                             "--output-file",
                             "--output-format",
                             "--output-gzip",
                             "--kernel-trace",
                             "--summary",
                             "--input",
                             "--list-avail",
                             "--pmc-check",
                             "--chip",
                             "--log-level",
                             "--quiet",
                             "--version",
                             "--help"}) {
    EXPECT_HAS(h, option);
  }
  EXPECT_HAS(h, "kreplay --pmc sm__cycles_elapsed.avg smsp__inst_executed.sum -- ./app");
}

// ----- errors ---------------------------------------------------------------------------------

TEST(OptionErrors, UnknownOptionSuggestsTheCloseOne) {
  std::string m = fails({"--pcm", "A", "--", "./app"});
  EXPECT_HAS(m, "unknown option --pcm");
  EXPECT_HAS(m, "did you mean --pmc?");
  m = fails({"--kernel-include", "x", "--", "./app"});
  EXPECT_HAS(m, "did you mean --kernel-include-regex?");
  m = fails({"--output-fromat=csv", "--", "./app"});
  EXPECT_HAS(m, "unknown option --output-fromat");
  EXPECT_HAS(m, "did you mean --output-format?");
  m = fails({"--zzzzzzzz", "--", "./app"});
  EXPECT_HAS(m, "unknown option --zzzzzzzz");
  EXPECT_EQ(m.find("did you mean"), std::string::npos);
}

TEST(OptionErrors, StrayArgumentBeforeDoubleDash) {
  std::string m = fails({"--kernel-trace", "./app", "x"});
  EXPECT_HAS(m, "unexpected argument \"./app\"");
  EXPECT_HAS(m, "go after --");
}

TEST(OptionErrors, MissingApplication) {
  std::string m = fails({"--pmc", "A"});
  EXPECT_HAS(m, "no application to profile");
  EXPECT_HAS(m, "-- ./app");
  EXPECT_HAS(fails({"--"}), "no application to profile");
  EXPECT_HAS(fails({"--", ""}), "application name after -- is empty");
}

// Issue 12: --cache-control all|none (as ncu; unset means the default, all) and
// --clock-control, accepted with none only.
TEST(Options, CacheAndClockControl) {
  EXPECT_FALSE(ok({"--", "a"}).settings.cache_control.has_value());
  EXPECT_EQ(ok({"--cache-control", "none", "--", "a"}).settings.cache_control, CacheControl::kNone);
  EXPECT_EQ(ok({"--cache-control", "all", "--", "a"}).settings.cache_control, CacheControl::kAll);
  EXPECT_EQ(ok({"--clock-control", "none", "--", "a"}).settings, RunSettings{});
  EXPECT_FALSE(ok({"--", "a"}).settings.check_divergence.has_value());
  EXPECT_EQ(ok({"--check-divergence", "--", "a"}).settings.check_divergence, true);
  std::string m = fails({"--cache-control", "some", "--", "a"});
  EXPECT_HAS(m, "--cache-control: unknown value \"some\"; use all or none");
  m = fails({"--clock-control", "base", "--", "a"});
  EXPECT_HAS(m, "--clock-control 'base': kreplay never changes clocks on a shared GPU");
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 0) << m;
}

TEST(OptionErrors, ApplicationSwallowedByPmc) {
  std::string m = fails({"--pmc", "A", "./app"});
  EXPECT_HAS(m, "\"./app\" looks like a path");
}

TEST(OptionErrors, BadEnumValues) {
  std::string m = fails({"--replay-mode", "kernal", "--", "a"});
  EXPECT_HAS(m, "--replay-mode: unknown value \"kernal\"");
  EXPECT_HAS(m, "use kernel, auto, application or range");
  EXPECT_HAS(m, "did you mean kernel?");
  m = fails({"--replay-memory", "some", "--", "a"});
  EXPECT_HAS(m, "--replay-memory: unknown value \"some\"; use all or args");
  m = fails({"--output-format", "csv,rocpd", "--", "a"});
  EXPECT_HAS(m, "--output-format: unknown value \"rocpd\"");
  m = fails({"--log-level", "loud", "--", "a"});
  EXPECT_HAS(m, "--log-level: unknown value \"loud\"");
  m = fails({"--range-markers", "nvtx:", "--", "a"});
  EXPECT_HAS(m, "nvtx:NAME");
  m = fails({"--range-markers", "markers", "--", "a"});
  EXPECT_HAS(m, "unknown markers \"markers\"");
}

TEST(OptionErrors, BadNumbers) {
  EXPECT_HAS(fails({"--launch-skip", "ten", "--", "a"}),
             "--launch-skip: \"ten\" is not a non-negative integer");
  EXPECT_HAS(fails({"--launch-skip", "-1", "--", "a"}), "--launch-skip");
  EXPECT_HAS(fails({"--launch-count", "0", "--", "a"}), "--launch-count: must be at least 1");
}

TEST(OptionErrors, BadFilters) {
  EXPECT_HAS(fails({"--kernel-include-regex", "a(", "--", "a"}),
             "--kernel-include-regex \"a(\" is not a valid regular expression");
  EXPECT_HAS(fails({"--kernel-exclude-regex", "[", "--", "a"}), "--kernel-exclude-regex");
  EXPECT_HAS(fails({"-k", "regex:(", "--", "a"}), "--kernel-name regex:");
  std::string m = fails({"--kernel-iteration-range", "[1-", "--", "a"});
  EXPECT_HAS(m, "--kernel-iteration-range: bad kernel iteration range \"[1-\"");
}

TEST(OptionErrors, BadOutputNames) {
  std::string m = fails({"-o", "%hostnme%", "--", "a"});
  EXPECT_HAS(m, "--output-file: output name \"%hostnme%\": unknown token");
  EXPECT_HAS(fails({"-d", "", "--", "a"}), "--output-directory is empty");
}

TEST(OptionErrors, MissingValue) {
  std::string m = fails({"--output-directory"});
  EXPECT_HAS(m, "--output-directory needs a value");
  EXPECT_HAS(fails({"--pmc"}), "--pmc needs a value");
}

TEST(OptionErrors, OptionsMustBeUtf8ButTheApplicationsArgumentsNeedNot) {
  std::string m = fails({"--pmc", "A\xff", "--", "./app"});
  EXPECT_HAS(m, "argument 2 (\"A?\") is not valid UTF-8");
  CliOptions o = ok({"--", "./app", "caf\xe9"});  // Latin-1 file name: the application's business
  EXPECT_EQ(o.command[1], "caf\xe9");
  EXPECT_HAS(fails({"--pcm\r", "--", "./app"}), "unknown option --pcm?");  // one line
}

TEST(OptionErrors, GivenTwice) {
  std::string m = fails({"-o", "a", "-o", "b", "--", "./app"});
  EXPECT_HAS(m, "--output-file is given more than once");
}

TEST(OptionErrors, Conflicts) {
  EXPECT_HAS(fails({"-q", "--log-level", "info", "--", "a"}),
             "-q/--quiet and --log-level both set the log level");
  EXPECT_HAS(fails({"--replay-mode", "kernel", "--range-markers", "cuda-profiler", "--", "a"}),
             "--range-markers applies to --replay-mode range, not kernel");
  EXPECT_HAS(fails({"--list-avail", "--pmc-check", "A"}),
             "--list-avail and --pmc-check are two separate commands");
  EXPECT_HAS(fails({"--chip", "GH100", "--", "a"}), "--chip only applies to --list-avail");
  EXPECT_HAS(fails({"--list-avail", "--", "./app"}), "--list-avail runs no application");
  EXPECT_HAS(fails({"--pmc-check", "A", "-i", "x.yaml"}), "reads no input file");
  EXPECT_HAS(fails({"--list-avail", "--pmc", "A"}), "--list-avail takes no --pmc");
  EXPECT_HAS(fails({"-i", "", "--", "a"}), "-i/--input is empty");
  EXPECT_HAS(fails({"--chip", "", "--list-avail"}), "--chip is empty");
}

TEST(Options, SetsAndSections) {
  CliOptions o = ok({"--set", "detailed", "--section", "SpeedOfLight,Occupancy", "--section",
                     "regex:^Memory", "--section-folder", "my", "--", "./app"});
  EXPECT_EQ(o.settings.metric_set, "detailed");
  EXPECT_EQ(o.settings.sections,
            (std::vector<std::string>{"SpeedOfLight", "Occupancy", "regex:^Memory"}));
  EXPECT_EQ(o.settings.section_folder, "my");
  EXPECT_TRUE(ok({"--list-sets"}).list_sets);
  EXPECT_TRUE(ok({"--list-sections", "--section-folder", "d"}).list_sections);
  EXPECT_HAS(fails({"--set", "", "--", "a"}), "--set is empty");
  EXPECT_HAS(fails({"--list-sets", "--list-sections"}), "two separate commands");
  EXPECT_HAS(fails({"--set", "a", "--set", "b", "--", "a"}), "--set is given more than once");
}

// Item 7 of issue 14: a list (or any option's value) ends at the next word that is an option,
// wherever it stands; an option never becomes a value.
TEST(OptionErrors, AnOptionIsNeverAnotherOptionsValue) {
  std::string m = fails({"--pmc-check", "--chip", "GH100", "A", "B"});
  EXPECT_HAS(m, "--pmc-check needs its values before --chip, which is one of kreplay's options");
  EXPECT_HAS(m, "kreplay --pmc-check A B --chip GH100");
  EXPECT_EQ(m.find("unknown counter"), std::string::npos);
  // Every option that takes a value, followed by an option (a flag, or one with a value).
  std::vector<std::string> valued = {
      "--pmc", "--metrics", "--set", "--section", "--section-folder", "--replay-mode",
      "--range-markers", "--replay-memory", "--graph-profiling", "--kernel-include-regex",
      "--kernel-exclude-regex", "-k", "--kernel-name", "--kernel-iteration-range",
      "--launch-skip", "--launch-count", "-d", "--output-directory", "-o", "--output-file",
      "--output-format", "-i", "--input", "--pmc-check", "--chip", "--log-level"};
  valued.insert(valued.end(), {"--cache-control", "--clock-control"});
  for (const auto& opt : valued) {
    for (const std::vector<std::string>& after :
         {std::vector<std::string>{"--kernel-trace"}, std::vector<std::string>{"-S"},
          std::vector<std::string>{"--chip", "GH100"}, std::vector<std::string>{"--pmc=A"}}) {
      std::vector<std::string> args = {opt};
      args.insert(args.end(), after.begin(), after.end());
      args.insert(args.end(), {"--", "./app"});
      std::string e = fails(args);
      EXPECT_HAS(e, opt + " needs ");
      EXPECT_HAS(e, "before " + after[0].substr(0, after[0].find('=')));
    }
  }
  // A value written with = is a value, even one that starts with a dash.
  EXPECT_EQ(ok({"--kernel-name=-weird", "--", "./app"}).settings.kernel_name, "-weird");
  // Negative numbers are values, not options.
  EXPECT_HAS(fails({"--launch-skip", "-1", "--", "./app"}), "--launch-skip: \"-1\"");
}

TEST(OptionErrors, AWordLeftAfterAnEndedListSaysWhereItGoes) {
  std::string m = fails({"--pmc-check", "A", "--chip", "GH100", "B"});
  EXPECT_HAS(m, "unexpected argument \"B\": --chip ends the list of --pmc-check");
  EXPECT_HAS(m, "put all of --pmc-check's values before --chip");
  m = fails({"--pmc", "A", "--kernel-trace", "B", "--", "./app"});
  EXPECT_HAS(m, "--kernel-trace ends the list of --pmc");
  // A list still takes several words until the next option.
  EXPECT_EQ(ok({"--pmc-check", "A", "B", "--chip", "GH100"}).pmc_check,
            (std::vector<std::string>{"A", "B"}));
}

}  // namespace
}  // namespace kreplay::cli
