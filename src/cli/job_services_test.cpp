// Pins the per-pass services of input files (job_services.hpp): in job_replay_mode: kernel a
// job selects pc_sampling, sass_metrics / source_counters or pm_sampling instead of pmc, its pass
// goes where the job sits, and the seed's rejections carry over, one line each at the key.
#include "cli/job_services.hpp"

#include <gtest/gtest.h>

#include "cli/plan_test_util.hpp"

namespace kreplay::cli {

using config::PassKind;
using config::ToolConfig;

namespace {

using plan_testing::parse_cli;
using plan_testing::plan_error;
using plan_testing::plan_ok;
using plan_testing::yaml;

std::string error_of(const char* text) {
  InputFile f = yaml(text);
  return plan_error(parse_cli({}), &f);
}

TEST(JobServices, EachServiceJobIsAPassWhereTheJobSits) {
  InputFile f = yaml(
      "job_replay_mode: kernel\n"
      "jobs:\n"
      "  - pmc: [A]\n"
      "  - pc_sampling: true\n"
      "    pc_sampling_period: 7\n"
      "  - pmc: [B]\n"
      "  - source_counters: true\n"
      "  - pm_sampling: [pm__ops]\n"
      "    pm_sampling_interval: 250\n");
  auto plan = plan_ok(parse_cli({}), &f);
  ASSERT_EQ(plan.runs.size(), 1u);
  const ToolConfig& c = plan.runs[0].config;
  EXPECT_EQ(c.replay_mode, ReplayMode::kKernel);
  std::vector<PassKind> kinds;
  for (const auto& p : c.passes) {
    kinds.push_back(p.kind);
    EXPECT_EQ(p.after_counters, -1);  // in job order, not after the counters
  }
  EXPECT_EQ(kinds,
            (std::vector<PassKind>{PassKind::kCounters, PassKind::kPcSampling, PassKind::kCounters,
                                   PassKind::kSassMetrics, PassKind::kPmSampling}));
  EXPECT_EQ(c.services.pc_sampling_period, 7u);
  EXPECT_TRUE(c.services.sass_metrics.empty());  // source_counters: the default set
  EXPECT_EQ(c.services.pm_metrics, (std::vector<std::string>{"pm__ops"}));
  EXPECT_EQ(c.services.pm_interval_ns, 250u);
  // Two service jobs make a run without counters.
  InputFile two = yaml(
      "job_replay_mode: kernel\njobs:\n  - sass_metrics: [smsp__sass_inst_executed]\n"
      "  - timing_pass: true\n");
  auto p2 = plan_ok(parse_cli({}), &two);
  ASSERT_EQ(p2.runs.size(), 1u);
  EXPECT_EQ(p2.runs[0].config.services.sass_metrics,
            (std::vector<std::string>{"smsp__sass_inst_executed"}));
}

TEST(JobServices, TheSeedsRejectionsCarryOver) {
  // Two services on one job.
  EXPECT_HAS(error_of("job_replay_mode: kernel\njobs:\n  - pmc: [A]\n    pc_sampling: true\n"),
             "selects both pmc and pc_sampling");
  EXPECT_HAS(error_of("job_replay_mode: kernel\njobs:\n  - pmc: [A]\n  - pm_sampling: [p]\n"
                      "    sass_metrics: [s]\n"),
             "selects both sass_metrics and pm_sampling");
  // None.
  EXPECT_HAS(error_of("job_replay_mode: kernel\njobs:\n  - pmc: [A]\n  - pc_sampling: false\n"),
             "jobs[1]: collects nothing");
  // Two jobs of a one-per-run service.
  EXPECT_HAS(error_of("job_replay_mode: kernel\njobs:\n  - pc_sampling: true\n  - pmc: [A]\n"
                      "  - pc_sampling: true\n"),
             "jobs[2].pc_sampling: a second PC sampling job (job 1 is the first)");
  EXPECT_HAS(error_of("job_replay_mode: kernel\njobs:\n  - source_counters: true\n"
                      "  - sass_metrics: [s]\n"),
             "a second SASS metrics job");
  // A service's settings on a job of another service.
  EXPECT_HAS(error_of("job_replay_mode: kernel\njobs:\n  - pmc: [A]\n  - pc_sampling: true\n"
                      "    pm_sampling_interval: 10\n"),
             "jobs[1].pm_sampling_interval: pm_sampling_interval configures PM sampling, but "
             "this is a PC sampling job; move it to the job with pm_sampling");
  EXPECT_HAS(error_of("job_replay_mode: kernel\njobs:\n  - pmc: [A]\n    pc_sampling_period: 9\n"
                      "  - pc_sampling: true\n"),
             "configures PC sampling, but this is a counter job");
  EXPECT_HAS(error_of("job_replay_mode: kernel\njobs:\n  - pmc: [A]\n  - sass_metrics: [s]\n"
                      "    source_counters: true\n"),
             "give one of them");
  // A file with one pass and no counters needs no replay.
  EXPECT_HAS(error_of("job_replay_mode: kernel\njobs:\n  - pc_sampling: true\n"),
             "needs at least one job with pmc (or two service jobs)");
  // Application mode cannot confine a service to a pass.
  EXPECT_HAS(error_of("jobs:\n  - pc_sampling: true\n"),
             "jobs[0].pc_sampling: pc_sampling selects a pass of its own, which needs "
             "job_replay_mode: kernel");
  // Bad values are parse errors, at the key.
  auto bad = parse_input_text(
      "job_replay_mode: kernel\njobs:\n  - pmc: [A]\n  - pc_sampling: true\n"
      "    pc_sampling_period: 40\n",
      InputFormat::kYaml, "jobs.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_HAS(bad.status().message(),
             "jobs.yaml:5:5: jobs[1].pc_sampling_period: 2^40 cycles; use 5 to 31");
}

}  // namespace
}  // namespace kreplay::cli
