// Pins the run-plan rules of plan.hpp: replay-mode defaults, application replay into pass_k,
// input files in both job_replay_modes (every rejection and its message), the fixes of the
// rocprofv3 bugs "found, not fixed" in the job_replay_mode PR (jobs without pmc were dropped; a
// boolean left at its default counted as set), rotation, and plan-time validation.
#include "cli/plan.hpp"
#include "cli/plan_test_util.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kreplay::cli {

using config::parse_tool_config;
using config::PassKind;
using config::PassSpec;
using config::serialize_tool_config;
using config::ToolConfig;

namespace {

using namespace plan_testing;
using Groups = std::vector<std::vector<std::string>>;

CliOptions cli(std::vector<std::string> args) {
  return parse_cli(std::move(args));
}

std::vector<PassSpec> counters(int n) {
  std::vector<PassSpec> out;
  for (int i = 0; i < n; ++i) out.push_back({PassKind::kCounters, i, false});
  return out;
}

// ----- command line only
// --------------------------------------------------------------------------

TEST(PlanCli, NoCountersIsOneRunWithoutReplay) {
  RunPlan p = plan_ok(cli({"--kernel-trace", "--set", "none"}));
  EXPECT_TRUE(p.notes.empty());
  EXPECT_EQ(p.action, PlanAction::kRun);
  ASSERT_EQ(p.runs.size(), 1u);
  const ToolConfig& c = p.runs[0].config;
  EXPECT_EQ(c.replay_mode, ReplayMode::kApplication);
  EXPECT_TRUE(c.passes.empty());
  EXPECT_TRUE(c.output.kernel_trace);
  EXPECT_EQ(c.output.directory, ".");
  EXPECT_EQ(c.output.file, "%hostname%/%pid%");
  EXPECT_FALSE(c.output.file_from_user);
  EXPECT_EQ(c.app_pass, 1u);
  EXPECT_EQ(c.app_pass_count, 1u);
  EXPECT_EQ(c.command, (std::vector<std::string>{"./app"}));
  EXPECT_EQ(p.command, (std::vector<std::string>{"./app"}));
  EXPECT_EQ(c.origin, "command line");
  EXPECT_EQ(p.runs[0].label, "run 1 of 1 (command line)");
  EXPECT_EQ(c.log_level, "");  // not given: the tool keeps KREPLAY_LOG_LEVEL
  EXPECT_EQ(p.log_level, "");
}

TEST(PlanCli, OneGroupIsOneRunWithoutReplay) {
  RunPlan p = plan_ok(cli({"--pmc", "A", "B"}));
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0].config.replay_mode, ReplayMode::kApplication);
  EXPECT_EQ(p.runs[0].config.pmc_groups, (Groups{{"A", "B"}}));
  EXPECT_EQ(p.runs[0].config.passes, counters(1));
}

TEST(PlanCli, SeveralGroupsDefaultToAutoReplay) {
  RunPlan p = plan_ok(cli({"--pmc", "A", "B", "--pmc", "C", "--pmc", "D"}));
  ASSERT_EQ(p.runs.size(), 1u);
  const ToolConfig& c = p.runs[0].config;
  EXPECT_EQ(c.replay_mode, ReplayMode::kRange);  // auto, resolved
  EXPECT_EQ(c.pmc_groups, (Groups{{"A", "B"}, {"C"}, {"D"}}));
  EXPECT_EQ(c.passes, counters(3));
  EXPECT_EQ(c.output.directory, ".");  // one run: no pass_k
}

TEST(PlanCli, MetricsDefaultToAutoReplay) {
  RunPlan p = plan_ok(cli({"--metrics", "m1,m2"}));
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0].config.replay_mode, ReplayMode::kRange);
  EXPECT_EQ(plan_ok(cli({"--metrics", "m1,m2", "-k", "gemm"})).runs[0].config.replay_mode,
            ReplayMode::kKernel);
  EXPECT_EQ(p.runs[0].config.metrics, (std::vector<std::string>{"m1", "m2"}));
  EXPECT_TRUE(p.runs[0].config.passes.empty());
}

// --replay-mode auto (issue 13 item 5): range replay, except for what range replay does not
// serve, where it is kernel replay; never left unresolved in a ToolConfig.
TEST(PlanCli, AutoIsRangeReplayUnlessTheRequestNeedsKernelReplay) {
  auto mode_of = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"--metrics", "m1,m2", "--replay-mode", "auto"});
    RunPlan p = plan_ok(cli(args));
    EXPECT_EQ(p.runs.size(), 1u);
    return p.runs.empty() ? ReplayMode::kAuto : p.runs[0].config.replay_mode;
  };
  EXPECT_EQ(mode_of({}), ReplayMode::kRange);
  EXPECT_EQ(mode_of({"--range-markers", "cuda-profiler"}), ReplayMode::kRange);
  for (std::vector<std::string> kernel : {std::vector<std::string>{"-k", "gemm"},
                                          {"--kernel-exclude-regex", "x"},
                                          {"--kernel-include-regex", "x"},
                                          {"--launch-skip", "2"},
                                          {"--launch-count", "3"},
                                          {"--kernel-iteration-range", "[1-2]"},
                                          {"--replay-memory", "args"},
                                          {"--check-divergence"},
                                          {"--pc-sampling"},
                                          {"--timing-pass"}}) {
    EXPECT_EQ(mode_of(kernel), ReplayMode::kKernel) << kernel[0];
  }
  // Without --replay-mode, more than one pass means auto; kernel and range still force one.
  EXPECT_EQ(plan_ok(cli({"--pmc", "A", "--pmc", "B"})).runs[0].config.replay_mode,
            ReplayMode::kRange);
  EXPECT_EQ(plan_ok(cli({"--pmc", "A", "--pmc", "B", "--replay-mode", "kernel"}))
                .runs[0]
                .config.replay_mode,
            ReplayMode::kKernel);
  EXPECT_EQ(plan_ok(cli({"--pmc", "A", "--pmc", "B", "-k", "x", "--replay-mode", "range"}))
                .runs[0]
                .config.replay_mode,
            ReplayMode::kRange);
}

TEST(PlanCli, ApplicationReplayMakesOneRunPerGroupInPassDirectories) {
  RunPlan p = plan_ok(cli({"--pmc", "A", "--pmc", "B", "C", "--pmc", "D", "--replay-mode",
                           "application", "-d", "out"}));
  ASSERT_EQ(p.runs.size(), 3u);
  const Groups expected[] = {{{"A"}}, {{"B", "C"}}, {{"D"}}};
  for (size_t k = 0; k < 3; ++k) {
    const ToolConfig& c = p.runs[k].config;
    EXPECT_EQ(c.replay_mode, ReplayMode::kApplication);
    EXPECT_EQ(c.app_pass, k + 1);
    EXPECT_EQ(c.app_pass_count, 3u);
    EXPECT_EQ(c.output.directory, "out/pass_" + std::to_string(k + 1));
    EXPECT_EQ(c.pmc_groups, expected[k]);
    EXPECT_EQ(c.passes, counters(1));
    EXPECT_EQ(p.runs[k].label, "run " + std::to_string(k + 1) + " of 3 (command line)");
  }
  // The default directory gets pass_k too.
  RunPlan d = plan_ok(cli({"--pmc", "A", "--pmc", "B", "--replay-mode", "application"}));
  EXPECT_EQ(d.runs[0].config.output.directory, "./pass_1");
  EXPECT_EQ(d.runs[1].config.output.directory, "./pass_2");
  EXPECT_EQ(pass_directory("out/", 3), "out/pass_3");
}

TEST(PlanCli, KernelAndRangeReplayWithOneGroupAreOnePass) {
  RunPlan p =
      plan_ok(cli({"--pmc", "A", "--replay-mode", "kernel", "--kernel-replay-beta-enabled"}));
  EXPECT_EQ(p.runs[0].config.replay_mode, ReplayMode::kKernel);
  EXPECT_EQ(p.runs[0].config.passes, counters(1));
  RunPlan r = plan_ok(
      cli({"--pmc", "A", "--pmc", "B", "--replay-mode", "range", "--range-markers", "nvtx:step"}));
  EXPECT_EQ(r.runs[0].config.replay_mode, ReplayMode::kRange);
  EXPECT_EQ(r.runs[0].config.range_markers, "nvtx:step");
  EXPECT_EQ(r.runs[0].config.passes, counters(2));
}

TEST(PlanCli, Rejections) {
  std::string m = plan_error(cli({"--metrics", "m", "--replay-mode", "application"}));
  EXPECT_HAS(m, "--metrics needs kernel or range replay");
  EXPECT_HAS(m, "drop --replay-mode application");
  m = plan_error(cli({"--replay-mode", "kernel", "--set", "none"}));
  EXPECT_HAS(m, "--replay-mode kernel replays launches to collect counters, but there are none");
  EXPECT_HAS(m, "add --pmc, --metrics or --set");
  m = plan_error(cli({"--replay-mode", "range", "--kernel-trace", "--set", "none"}));
  EXPECT_HAS(m, "--replay-mode range replays launches");
  // --range-markers without a replay mode: the default mode is not range.
  m = plan_error(cli({"--pmc", "A", "--range-markers", "cuda-profiler"}));
  EXPECT_HAS(m, "--range-markers applies to replay mode range, not application");
}

TEST(PlanCli, EveryOptionReachesTheToolConfig) {
  RunPlan p = plan_ok(cli({"--pmc",
                           "A",
                           "--kernel-include-regex",
                           "gemm",
                           "--kernel-exclude-regex",
                           "naive",
                           "-k",
                           "regex:^g",
                           "--kernel-iteration-range",
                           "[1-3, 5]",
                           "--launch-skip",
                           "2",
                           "--launch-count",
                           "4",
                           "-d",
                           "out",
                           "-o",
                           "r_%rank%",
                           "--output-format",
                           "csv,json",
                           "--kernel-trace",
                           "-S",
                           "--output-gzip",
                           "--replay-memory",
                           "args",
                           "--log-level",
                           "info",
                           "--",
                           "./app",
                           "x"}));
  const ToolConfig& c = p.runs[0].config;
  EXPECT_EQ(c.filters.include_regex, "gemm");
  EXPECT_EQ(c.filters.exclude_regex, "naive");
  EXPECT_EQ(c.filters.kernel_name, "regex:^g");
  EXPECT_EQ(c.filters.iteration_range, "[1-3, 5]");
  EXPECT_EQ(c.filters.launch_skip, 2u);
  EXPECT_EQ(c.filters.launch_count, 4u);
  EXPECT_EQ(c.output.directory, "out");
  EXPECT_EQ(c.output.file, "r_%rank%");
  EXPECT_TRUE(c.output.file_from_user);
  EXPECT_EQ(c.output.formats, (std::vector<OutputFormat>{OutputFormat::kCsv, OutputFormat::kJson}));
  EXPECT_TRUE(c.output.kernel_trace);
  EXPECT_TRUE(c.output.summary);
  EXPECT_TRUE(c.output.gzip);
  EXPECT_EQ(c.replay_memory, ReplayMemory::kArgs);
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.command, (std::vector<std::string>{"./app", "x"}));
  EXPECT_EQ(p.log_level, "info");
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(plan_ok(cli({"-q"})).runs[0].config.log_level, "quiet");
}

TEST(PlanCli, FixedOutputNameWarnsAboutForkingApplications) {
  RunPlan p = plan_ok(cli({"-o", "results"}));
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_HAS(p.warnings[0], "output file \"results\" has no %pid%, %rank% or %q{VAR}");
  EXPECT_HAS(p.warnings[0], "writes \"results.<pid>\" instead");
  EXPECT_TRUE(plan_ok(cli({"-o", "results_%p"})).warnings.empty());
  EXPECT_TRUE(plan_ok(cli({"-o", "r.%q{OMPI_COMM_WORLD_RANK}"})).warnings.empty());
}

TEST(PlanCli, OtherActions) {
  EXPECT_EQ(plan_ok(cli({"--help"})).action, PlanAction::kHelp);
  EXPECT_FALSE(plan_ok(cli({"--help"})).help_text.empty());
  EXPECT_EQ(plan_ok(cli({"--version"})).action, PlanAction::kVersion);
  auto parsed =
      parse_command_line(std::vector<std::string>{"kreplay", "--list-avail", "--chip", "GH100"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  RunPlan list = plan_ok(*parsed);
  EXPECT_EQ(list.action, PlanAction::kListAvail);
  EXPECT_EQ(list.chip, "GH100");
  EXPECT_TRUE(list.runs.empty());
  auto check = parse_command_line(std::vector<std::string>{"kreplay", "--pmc-check", "A", "B"});
  ASSERT_TRUE(check.ok());
  RunPlan pc = plan_ok(*check);
  EXPECT_EQ(pc.action, PlanAction::kPmcCheck);
  EXPECT_EQ(pc.pmc_check, (std::vector<std::string>{"A", "B"}));
  EXPECT_FALSE(pc.chip.has_value());
}

TEST(PlanCli, FiltersAreValidatedAtPlanTime) {
  CliOptions o;  // built by hand: bypasses the parser's checks
  o.command = {"./app"};
  o.settings.kernel_include_regex = "gemm(";
  EXPECT_HAS(plan_error(o), "is not a valid regular expression");
  o.settings.kernel_include_regex.reset();
  o.settings.kernel_iteration_range = "[1-";
  EXPECT_HAS(plan_error(o), "bad kernel iteration range");
  o.settings.kernel_iteration_range.reset();
  o.settings.output_file = "%nope%";
  EXPECT_HAS(plan_error(o), "unknown token %nope%");
  o.settings.output_file.reset();
  o.command.clear();
  EXPECT_HAS(plan_error(o), "no application to profile");
}

// ----- input files, job_replay_mode: application
// ----------------------------------------------------

// rocprofv3 bug (found, not fixed): "a multi-job file silently drops every job without pmc. Two
// trace-only jobs produce zero runs, and an ATT job next to a pmc job never runs."
TEST(PlanApplicationJobs, JobsWithoutCountersAreRunsToo) {
  InputFile f = json(R"({"jobs": [
      {"kernel_trace": true},
      {"pmc": ["A", "B"]},
      {"timing_pass": true, "timing_pass_flush_cache": true},
      {"summary": true}]})");
  RunPlan p = plan_ok(cli({}), &f);
  ASSERT_EQ(p.runs.size(), 4u);
  EXPECT_TRUE(p.runs[0].config.output.kernel_trace);
  EXPECT_TRUE(p.runs[0].config.pmc_groups.empty());
  EXPECT_EQ(p.runs[1].config.pmc_groups, (Groups{{"A", "B"}}));
  EXPECT_EQ(p.runs[2].config.passes, (std::vector<PassSpec>{{PassKind::kTiming, -1, true}}));
  EXPECT_TRUE(p.runs[3].config.output.summary);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(p.runs[k].config.app_pass, k + 1);
    EXPECT_EQ(p.runs[k].config.app_pass_count, 4u);
    EXPECT_EQ(p.runs[k].config.output.directory, "./pass_" + std::to_string(k + 1));
    EXPECT_EQ(p.runs[k].config.replay_mode, ReplayMode::kApplication);
  }
  EXPECT_EQ(p.runs[1].config.origin, "jobs.json, job 2");
  EXPECT_EQ(p.runs[1].label, "run 2 of 4 (jobs.json, job 2)");

  InputFile two_traces =
      yaml("jobs:\n  - kernel_trace: true\n  - kernel_trace: true\n    name: t2\n");
  RunPlan t = plan_ok(cli({}), &two_traces);
  ASSERT_EQ(t.runs.size(), 2u);
  EXPECT_EQ(t.runs[1].config.origin, "jobs.yaml, job 2 (\"t2\")");
}

TEST(PlanApplicationJobs, SingleJobWritesIntoTheDirectoryItself) {
  InputFile f = json(R"({"jobs": [{"pmc": ["A"], "output_directory": "res"}]})");
  RunPlan p = plan_ok(cli({}), &f);
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0].config.output.directory, "res");
}

TEST(PlanApplicationJobs, EachJobKeepsItsOwnOptions) {
  InputFile f = yaml(R"(
jobs:
  - pmc: [A]
    kernel_include_regex: gemm
    output_directory: first
  - pmc: [B]
    kernel_iteration_range: [2-3]
    output_directory: second
    replay_memory: args
)");
  RunPlan p = plan_ok(cli({}), &f);
  ASSERT_EQ(p.runs.size(), 2u);
  EXPECT_EQ(p.runs[0].config.filters.include_regex, "gemm");
  EXPECT_EQ(p.runs[0].config.filters.iteration_range, "");
  EXPECT_EQ(p.runs[0].config.output.directory, "first/pass_1");
  EXPECT_EQ(p.runs[1].config.filters.include_regex, "");
  EXPECT_EQ(p.runs[1].config.filters.iteration_range, "[2-3]");
  EXPECT_EQ(p.runs[1].config.output.directory, "second/pass_2");
  EXPECT_EQ(p.runs[1].config.replay_memory, ReplayMemory::kArgs);
  EXPECT_EQ(p.runs[0].config.replay_memory, ReplayMemory::kAll);
}

TEST(PlanApplicationJobs, JobReplayAppliesWithinTheJob) {
  InputFile f =
      json(R"({"jobs": [{"metrics": ["m1", "m2"]}, {"pmc": ["A"], "replay_mode": "kernel"}]})");
  RunPlan p = plan_ok(cli({}), &f);
  ASSERT_EQ(p.runs.size(), 2u);
  EXPECT_EQ(p.runs[0].config.replay_mode, ReplayMode::kRange);  // auto, the default
  EXPECT_EQ(p.runs[1].config.replay_mode, ReplayMode::kKernel);
  EXPECT_EQ(p.runs[1].config.passes, counters(1));
}

TEST(PlanApplicationJobs, CommandLineAppliesToEveryJob) {
  InputFile f = json(R"({"jobs": [{"pmc": ["A"]}, {"kernel_trace": true}]})");
  RunPlan p = plan_ok(cli({"--kernel-include-regex", "gemm", "-d", "out", "--summary"}), &f);
  ASSERT_EQ(p.runs.size(), 2u);
  for (const PlannedRun& r : p.runs) {
    EXPECT_EQ(r.config.filters.include_regex, "gemm");
    EXPECT_TRUE(r.config.output.summary);
  }
  EXPECT_EQ(p.runs[0].config.output.directory, "out/pass_1");
  EXPECT_EQ(p.runs[1].config.output.directory, "out/pass_2");
}

TEST(PlanApplicationJobs, CommandLineGroupsFillJobsWithoutPmc) {
  InputFile f = json(R"({"jobs": [{"kernel_include_regex": "a"}, {"pmc": ["X"]}]})");
  RunPlan p = plan_ok(cli({"--pmc", "X"}), &f);
  ASSERT_EQ(p.runs.size(), 2u);
  EXPECT_EQ(p.runs[0].config.pmc_groups, (Groups{{"X"}}));
  EXPECT_EQ(p.runs[1].config.pmc_groups, (Groups{{"X"}}));
  // Several command-line groups with application replay expand the job, numbered globally.
  InputFile g = json(R"({"jobs": [{"kernel_trace": true}, {"replay_mode": "application"}]})");
  RunPlan q = plan_ok(cli({"--pmc", "A", "--pmc", "B"}), &g);
  // Job 1: auto (range) replay of A and B (the default for two groups); job 2: one run per group.
  ASSERT_EQ(q.runs.size(), 3u);
  EXPECT_EQ(q.runs[0].config.replay_mode, ReplayMode::kRange);
  EXPECT_EQ(q.runs[0].config.pmc_groups, (Groups{{"A"}, {"B"}}));
  EXPECT_EQ(q.runs[1].config.replay_mode, ReplayMode::kApplication);
  EXPECT_EQ(q.runs[1].config.pmc_groups, (Groups{{"A"}}));
  EXPECT_EQ(q.runs[2].config.pmc_groups, (Groups{{"B"}}));
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(q.runs[k].config.app_pass, k + 1);
    EXPECT_EQ(q.runs[k].config.app_pass_count, 3u);
    EXPECT_EQ(q.runs[k].config.output.directory, "./pass_" + std::to_string(k + 1));
  }
}

// The seed: "Input files are unaffected by the flag ... replay applies within each job to the
// counter groups that job asks for." A job without counters is not an error under
// --replay-mode kernel; it runs as it would without it.
TEST(PlanApplicationJobs, CommandLineReplayModeAppliesToJobsWithCounters) {
  InputFile f = json(R"({"jobs": [
      {"pmc": ["A"]},
      {"kernel_trace": true},
      {"pmc_groups": [["B"], ["C"]]},
      {"timing_pass": true},
      {"metrics": ["m"]}]})");
  RunPlan p = plan_ok(cli({"--replay-mode", "kernel", "--kernel-replay-beta-enabled"}), &f);
  ASSERT_EQ(p.runs.size(), 5u);
  EXPECT_EQ(p.runs[0].config.replay_mode, ReplayMode::kKernel);
  EXPECT_EQ(p.runs[1].config.replay_mode, ReplayMode::kApplication);
  EXPECT_EQ(p.runs[2].config.replay_mode, ReplayMode::kApplication);
  EXPECT_EQ(p.runs[2].config.rotation.groups.size(), 2u);
  EXPECT_EQ(p.runs[3].config.replay_mode, ReplayMode::kApplication);
  EXPECT_EQ(p.runs[4].config.replay_mode, ReplayMode::kKernel);
  // Range markers from the command line follow the same rule.
  InputFile g = json(R"({"jobs": [{"pmc": ["A"]}, {"kernel_trace": true}]})");
  RunPlan r = plan_ok(cli({"--replay-mode", "range", "--range-markers", "cuda-profiler"}), &g);
  EXPECT_EQ(r.runs[0].config.range_markers, "cuda-profiler");
  EXPECT_EQ(r.runs[1].config.range_markers, "");
  EXPECT_EQ(r.runs[1].config.replay_mode, ReplayMode::kApplication);
}

TEST(PlanApplicationJobs, JobAndCommandLinePmcMustAgree) {
  InputFile f = json(R"({"jobs": [{"pmc": ["A"]}]})");
  std::string m = plan_error(cli({"--pmc", "B"}), &f);
  EXPECT_HAS(m,
             "jobs.json:1:12: jobs[0].pmc: the job's pmc [A] differs from --pmc on the "
             "command line");
  EXPECT_TRUE(make_run_plan(cli({"--pmc", "A"}), &f).ok());
}

// rocprofv3 bug (found, not fixed): "a job setting att_serialize_all: true fails with a
// RuntimeError, because the argparse default False counts as set". Here a flag the command line
// does not give is unset, so a job may set it either way.
TEST(PlanApplicationJobs, BooleansLeftAtTheirDefaultDoNotCountAsSet) {
  for (const char* key : {"kernel_trace", "summary", "output_gzip"}) {
    for (const char* value : {"true", "false"}) {
      InputFile f = json(std::string(R"({"jobs": [{")") + key + "\": " + value + "}]}");
      auto p = make_run_plan(cli({}), &f);
      ASSERT_TRUE(p.ok()) << key << "=" << value << ": " << p.status().message();
    }
  }
  InputFile f = json(R"({"jobs": [{"kernel_trace": true, "summary": true, "output_gzip": true}]})");
  RunPlan p = plan_ok(cli({}), &f);
  EXPECT_TRUE(p.runs[0].config.output.kernel_trace);
  EXPECT_TRUE(p.runs[0].config.output.summary);
  EXPECT_TRUE(p.runs[0].config.output.gzip);
  // Given on both sides with the same value: fine.
  EXPECT_TRUE(make_run_plan(cli({"--kernel-trace"}), &f).ok());
}

TEST(PlanApplicationJobs, JobAndCommandLineDisagreeing) {
  InputFile f = yaml("jobs:\n  - kernel_trace: false\n  - output_directory: a\n");
  std::string m = plan_error(cli({"--kernel-trace"}), &f);
  EXPECT_HAS(m,
             "jobs.yaml:2:5: jobs[0].kernel_trace: kernel_trace is false here but true on the "
             "command line (--kernel-trace); give it in one place");
  m = plan_error(cli({"-d", "b"}), &f);
  EXPECT_HAS(m,
             "jobs.yaml:3:5: jobs[1].output_directory: output_directory is \"a\" here but \"b\" "
             "on the command line (--output-directory)");
}

TEST(PlanApplicationJobs, Rotation) {
  InputFile f = yaml(
      "jobs:\n  - pmc_groups: [[A, B], [C]]\n    pmc_group_interval: 4\n"
      "  - pmc_groups: [[D]]\n");
  RunPlan p = plan_ok(cli({}), &f);
  ASSERT_EQ(p.runs.size(), 2u);
  const ToolConfig& c = p.runs[0].config;
  EXPECT_EQ(c.replay_mode, ReplayMode::kApplication);
  EXPECT_EQ(c.rotation.groups, (Groups{{"A", "B"}, {"C"}}));
  EXPECT_EQ(c.rotation.interval, 4u);
  EXPECT_TRUE(c.pmc_groups.empty());
  EXPECT_TRUE(c.passes.empty());
  EXPECT_EQ(p.runs[1].config.rotation.interval, 1u);  // default
}

TEST(PlanApplicationJobs, RotationRejections) {
  InputFile rot = json(R"({"jobs": [{"pmc_groups": [["A"], ["B"]]}]})");
  EXPECT_HAS(plan_error(cli({"--pmc", "C"}), &rot),
             "--pmc and pmc_groups both give counter groups");
  EXPECT_HAS(plan_error(cli({"--metrics", "m"}), &rot),
             "pmc_groups and metrics both give counters");
  InputFile replayed =
      json(R"({"jobs": [{"pmc_groups": [["A"], ["B"]], "replay_mode": "kernel"}]})");
  EXPECT_HAS(plan_error(cli({}), &replayed),
             "jobs[0].replay_mode: pmc_groups rotates counter groups across launches without "
             "replay, so it takes no replay_mode kernel");
  InputFile both = json(R"({"jobs": [{"pmc": ["A"], "pmc_groups": [["B"]]}]})");
  EXPECT_HAS(plan_error(cli({}), &both),
             "jobs[0].pmc_groups: pmc and pmc_groups both give counters");
  InputFile interval = json(R"({"jobs": [{"pmc": ["A"], "pmc_group_interval": 2}]})");
  EXPECT_HAS(plan_error(cli({}), &interval),
             "jobs[0].pmc_group_interval: pmc_group_interval needs pmc_groups");
  InputFile timing = json(R"({"jobs": [{"pmc_groups": [["A"]], "timing_pass": true}]})");
  EXPECT_HAS(plan_error(cli({}), &timing),
             "timing_pass cannot share a run with rotating pmc_groups");
}

TEST(PlanApplicationJobs, TimingJobRejections) {
  InputFile both = json(R"({"jobs": [{"pmc": ["A"], "timing_pass": true}]})");
  std::string m = plan_error(cli({}), &both);
  EXPECT_HAS(m, "jobs[0].timing_pass: timing_pass and counters in one job");
  EXPECT_HAS(m, "set job_replay_mode: kernel");
  InputFile flush = json(R"({"jobs": [{"pmc": ["A"], "timing_pass_flush_cache": true}]})");
  EXPECT_HAS(plan_error(cli({}), &flush),
             "jobs[0].timing_pass_flush_cache: timing_pass_flush_cache applies to a timing pass");
  InputFile range = json(R"({"jobs": [{"timing_pass": true, "replay_mode": "range"}]})");
  EXPECT_HAS(plan_error(cli({}), &range), "a timing job is one pass and needs no range replay");
}

TEST(PlanApplicationJobs, ReplayRulesApplyPerJob) {
  InputFile metrics = json(R"({"jobs": [{"metrics": ["m"], "replay_mode": "application"}]})");
  EXPECT_HAS(plan_error(cli({}), &metrics),
             "jobs[0].metrics: metrics needs kernel or range replay");
  InputFile empty = json(R"({"jobs": [{"replay_mode": "kernel"}]})");
  EXPECT_HAS(plan_error(cli({}), &empty),
             "jobs[0].replay_mode: replay_mode kernel replays launches to collect counters, but "
             "there are none; add pmc, metrics or set");
  InputFile markers = json(R"({"jobs": [{"pmc": ["A"], "range_markers": "cuda-profiler"}]})");
  EXPECT_HAS(plan_error(cli({}), &markers),
             "jobs[0].range_markers: range_markers applies to replay mode range");
}

// ----- input files, job_replay_mode: kernel
// --------------------------------------------------------

constexpr const char* kFoldJson = R"({
  "job_replay_mode": "kernel",
  "jobs": [
    {"pmc": ["SQ_WAVES", "GRBM_COUNT"], "kernel_include_regex": "gemm",
     "kernel_replay_beta_enabled": true},
    {"timing_pass": true, "timing_pass_flush_cache": true},
    {"pmc": ["GRBM_GUI_ACTIVE"], "output_directory": "out"}
  ]
})";

constexpr const char* kFoldYaml = R"(
job_replay_mode: kernel
jobs:
  - pmc: [SQ_WAVES, GRBM_COUNT]
    kernel_include_regex: gemm
    kernel_replay_beta_enabled: true
  - timing_pass: true
    timing_pass_flush_cache: true
  - pmc: GRBM_GUI_ACTIVE
    output_directory: out
)";

TEST(PlanKernelJobs, AutoFoldsIntoRangeReplayUnlessAJobNeedsKernelReplay) {
  InputFile counters = yaml(
      "job_replay_mode: kernel\njobs:\n  - pmc: [A]\n    replay_mode: auto\n"
      "  - pmc: [B]\n");
  EXPECT_EQ(plan_ok(cli({}), &counters).runs[0].config.replay_mode, ReplayMode::kRange);
  InputFile sampled = yaml(
      "job_replay_mode: kernel\njobs:\n  - pmc: [A]\n    replay_mode: auto\n"
      "  - pc_sampling: true\n");
  EXPECT_EQ(plan_ok(cli({}), &sampled).runs[0].config.replay_mode, ReplayMode::kKernel);
  InputFile filtered = yaml(
      "job_replay_mode: kernel\njobs:\n  - pmc: [A]\n    replay_mode: auto\n"
      "    kernel_name: gemm\n  - pmc: [B]\n");
  EXPECT_EQ(plan_ok(cli({}), &filtered).runs[0].config.replay_mode, ReplayMode::kKernel);
}

TEST(PlanKernelJobs, FoldsJobsIntoPassesOfOneRunInOrder) {
  InputFile f = json(kFoldJson);
  RunPlan p = plan_ok(cli({}), &f);
  ASSERT_EQ(p.runs.size(), 1u);
  const ToolConfig& c = p.runs[0].config;
  EXPECT_EQ(c.replay_mode, ReplayMode::kKernel);
  EXPECT_EQ(c.pmc_groups, (Groups{{"SQ_WAVES", "GRBM_COUNT"}, {"GRBM_GUI_ACTIVE"}}));
  EXPECT_EQ(c.passes, (std::vector<PassSpec>{{PassKind::kCounters, 0, false},
                                             {PassKind::kTiming, -1, true},
                                             {PassKind::kCounters, 1, false}}));
  // Run options from any job apply to the whole run; one directory, no pass_k.
  EXPECT_EQ(c.filters.include_regex, "gemm");
  EXPECT_EQ(c.output.directory, "out");
  EXPECT_EQ(c.app_pass_count, 1u);
  EXPECT_EQ(c.origin, "jobs.json, job_replay_mode: kernel, 3 passes");
}

TEST(PlanKernelJobs, YamlEquivalent) {
  InputFile j = json(kFoldJson);
  InputFile y = yaml(kFoldYaml);
  ToolConfig a = plan_ok(cli({}), &j).runs[0].config;
  ToolConfig b = plan_ok(cli({}), &y).runs[0].config;
  a.origin.clear();
  b.origin.clear();
  EXPECT_EQ(a, b);
}

TEST(PlanKernelJobs, TimingPassPlacement) {
  InputFile first = yaml("job_replay_mode: kernel\njobs:\n  - timing_pass: true\n  - pmc: A\n");
  EXPECT_EQ(
      plan_ok(cli({}), &first).runs[0].config.passes,
      (std::vector<PassSpec>{{PassKind::kTiming, -1, false}, {PassKind::kCounters, 0, false}}));
  InputFile last =
      yaml("job_replay_mode: kernel\njobs:\n  - pmc: A\n  - pmc: B\n  - timing_pass: true\n");
  EXPECT_EQ(plan_ok(cli({}), &last).runs[0].config.passes,
            (std::vector<PassSpec>{{PassKind::kCounters, 0, false},
                                   {PassKind::kCounters, 1, false},
                                   {PassKind::kTiming, -1, false}}));
}

TEST(PlanKernelJobs, RangeReplayAndAgreeingRunOptions) {
  InputFile f = yaml(R"(
job_replay_mode: kernel
jobs:
  - pmc: A
    replay_mode: range
    output_format: [csv]
  - pmc: B
    range_markers: nvtx:step
    output_format: csv
)");
  RunPlan p = plan_ok(cli({"--output-format", "csv"}), &f);
  const ToolConfig& c = p.runs[0].config;
  EXPECT_EQ(c.replay_mode, ReplayMode::kRange);
  EXPECT_EQ(c.range_markers, "nvtx:step");
  EXPECT_EQ(c.output.formats, (std::vector<OutputFormat>{OutputFormat::kCsv}));
}

TEST(PlanKernelJobs, BooleansLeftAtTheirDefaultDoNotConflict) {
  InputFile f =
      yaml("job_replay_mode: kernel\njobs:\n  - pmc: A\n    kernel_trace: true\n  - pmc: B\n");
  RunPlan p = plan_ok(cli({}), &f);
  EXPECT_TRUE(p.runs[0].config.output.kernel_trace);
}

std::string fold_error(std::string_view yaml_text, std::vector<std::string> args = {}) {
  InputFile f = yaml(yaml_text);
  return plan_error(cli(args), &f);
}

TEST(PlanKernelJobs, RejectJobWithBothServices) {
  std::string m = fold_error("job_replay_mode: kernel\njobs:\n  - pmc: A\n    timing_pass: true\n");
  EXPECT_HAS(m, "jobs.yaml:3:5: jobs[0]: selects both pmc and timing_pass");
  EXPECT_HAS(m, "split it into two jobs");
}

TEST(PlanKernelJobs, RejectJobWithNeitherService) {
  std::string m =
      fold_error("job_replay_mode: kernel\njobs:\n  - pmc: A\n  - kernel_trace: true\n");
  EXPECT_HAS(m, "jobs.yaml:4:5: jobs[1]: collects nothing");
  EXPECT_HAS(m, "give it pmc (a counter group), timing_pass: true, pc_sampling: true");
  m = fold_error("job_replay_mode: kernel\njobs:\n  - pmc: A\n  - timing_pass: false\n");
  EXPECT_HAS(m, "jobs[1]: collects nothing");
}

TEST(PlanKernelJobs, RejectSecondTimingJob) {
  std::string m = fold_error(
      "job_replay_mode: kernel\njobs:\n  - pmc: A\n  - timing_pass: true\n  - timing_pass: true\n");
  EXPECT_HAS(m, "jobs.yaml:5:5: jobs[2].timing_pass: a second timing job (job 2 is the first)");
}

TEST(PlanKernelJobs, RejectPmcGroupsOnAJob) {
  std::string m =
      fold_error("job_replay_mode: kernel\njobs:\n  - pmc: A\n  - pmc_groups: [[B], [C]]\n");
  EXPECT_HAS(m,
             "jobs[1].pmc_groups: pmc_groups rotates groups across launches and cannot be a "
             "replay pass");
  m = fold_error("job_replay_mode: kernel\njobs:\n  - pmc: A\n    pmc_group_interval: 2\n");
  EXPECT_HAS(m, "jobs[0].pmc_group_interval: pmc_group_interval rotates groups");
}

TEST(PlanKernelJobs, RejectTimingOptionsOnCounterJob) {
  std::string m =
      fold_error("job_replay_mode: kernel\njobs:\n  - pmc: A\n    timing_pass_flush_cache: true\n");
  EXPECT_HAS(m,
             "jobs.yaml:4:5: jobs[0].timing_pass_flush_cache: timing_pass_flush_cache "
             "configures the timing pass, but this is a counter job");
}

TEST(PlanKernelJobs, RejectFileWithoutPmcJob) {
  std::string m = fold_error("job_replay_mode: kernel\njobs:\n  - timing_pass: true\n");
  EXPECT_HAS(m, "jobs.yaml:1:1: job_replay_mode: kernel needs at least one job with pmc");
}

TEST(PlanKernelJobs, RejectApplicationReplayMode) {
  std::string m = fold_error(
      "job_replay_mode: kernel\njobs:\n  - pmc: A\n  - pmc: B\n    "
      "replay_mode: application\n");
  EXPECT_HAS(m,
             "jobs.yaml:5:5: jobs[1].replay_mode: replay_mode: application contradicts "
             "job_replay_mode: kernel");
  m = fold_error("job_replay_mode: kernel\njobs:\n  - pmc: A\n", {"--replay-mode", "application"});
  EXPECT_HAS(m, "--replay-mode application contradicts job_replay_mode: kernel");
}

TEST(PlanKernelJobs, RejectPassServicesOnTheCommandLine) {
  std::string m = fold_error("job_replay_mode: kernel\njobs:\n  - pmc: A\n", {"--pmc", "B"});
  EXPECT_HAS(m,
             "jobs.yaml:1:1: job_replay_mode: kernel takes its counter groups from the jobs' "
             "pmc; drop --pmc");
  m = fold_error("job_replay_mode: kernel\njobs:\n  - pmc: A\n", {"--metrics", "m"});
  EXPECT_HAS(m, "drop --metrics from the command line");
}

TEST(PlanKernelJobs, RejectMetricsOnAJob) {
  std::string m = fold_error("job_replay_mode: kernel\njobs:\n  - pmc: A\n    metrics: m\n");
  EXPECT_HAS(m, "jobs[0].metrics: metrics cannot be a pass of job_replay_mode: kernel");
}

TEST(PlanKernelJobs, RejectRunOptionsJobsDisagreeOn) {
  std::string m = fold_error(R"(
job_replay_mode: kernel
jobs:
  - pmc: A
    output_directory: one
  - pmc: B
  - pmc: C
    output_directory: two
)");
  EXPECT_HAS(m,
             "jobs.yaml:8:5: jobs[2].output_directory: jobs disagree on output_directory: "
             "job 1 has \"one\", job 3 has \"two\"");
  m = fold_error(
      "job_replay_mode: kernel\njobs:\n  - pmc: A\n    kernel_trace: true\n"
      "  - pmc: B\n    kernel_trace: false\n");
  EXPECT_HAS(m, "jobs disagree on kernel_trace: job 1 has true, job 2 has false");
  m = fold_error(
      "job_replay_mode: kernel\njobs:\n  - pmc: A\n    launch_count: 3\n"
      "  - timing_pass: true\n    launch_count: 4\n");
  EXPECT_HAS(m, "jobs disagree on launch_count: job 1 has 3, job 2 has 4");
}

TEST(PlanKernelJobs, RejectJobsDisagreeingWithCommandLine) {
  std::string m = fold_error(
      "job_replay_mode: kernel\njobs:\n  - pmc: A\n    output_directory: x\n", {"-d", "y"});
  EXPECT_HAS(m,
             "jobs.yaml: output_directory is \"x\" in the jobs but \"y\" on the command line "
             "(--output-directory)");
}

TEST(PlanKernelJobs, RejectRangeMarkersWithoutRangeMode) {
  std::string m = fold_error(
      "job_replay_mode: kernel\njobs:\n  - pmc: A\n    replay_mode: kernel\n    range_markers: "
      "cuda-profiler\n");
  EXPECT_HAS(m, "range_markers applies to replay_mode range");
}

// ----- reading the file
// -----------------------------------------------------------------------------

TEST(PlanInputFile, ReadsTheFileNamedByDashI) {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("kreplay_plan_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << kFoldYaml;
  auto p = make_run_plan(cli({"-i", path.string()}));
  std::filesystem::remove(path);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->runs.size(), 1u);
  EXPECT_EQ(p->runs[0].config.passes.size(), 3u);

  auto missing = make_run_plan(cli({"-i", "/nonexistent/jobs.yaml"}));
  ASSERT_FALSE(missing.ok());
  EXPECT_HAS(missing.status().message(), "cannot read input file /nonexistent/jobs.yaml");
}

TEST(PlanInputFile, EveryPlannedConfigRoundTrips) {
  InputFile f = json(kFoldJson);
  for (const PlannedRun& r : plan_ok(cli({"-o", "x_%p"}), &f).runs) {
    auto back = parse_tool_config(serialize_tool_config(r.config));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, r.config);
  }
}

}  // namespace
}  // namespace kreplay::cli
