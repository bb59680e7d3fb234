// Pins the plan's sets and sections (plan.hpp): --set, --section (names and regex:), the default
// set basic when no counters are named (and the one line that says so), --set none, sections
// that need data kreplay does not collect, --section-folder, input-file keys, and the rejections.
#include <gtest/gtest.h>

#include <algorithm>

#include "cli/plan.hpp"
#include "cli/plan_test_util.hpp"

namespace kreplay::cli {

using config::ToolConfig;

namespace {

using namespace plan_testing;

// The repository's section files, whatever the environment says.
CliOptions cli(std::vector<std::string> args) {
  CliOptions o = parse_cli(std::move(args));
  o.sections_folder = KREPLAY_SECTIONS_DIR;
  return o;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(PlanSections, NoCountersNamedCollectsBasicAndSaysSoOnOneLine) {
  RunPlan p = plan_ok(cli({"--kernel-trace"}));
  ASSERT_EQ(p.runs.size(), 1u);
  const ToolConfig& c = p.runs[0].config;
  EXPECT_EQ(c.replay_mode, ReplayMode::kRange);  // auto, the default for several passes
  EXPECT_TRUE(c.sections_default);
  EXPECT_EQ(c.sections_label, "set basic");
  EXPECT_TRUE(has(c.section_metrics, "gpu__time_duration.sum"));
  EXPECT_TRUE(has(c.section_metrics, "sm__warps_active.avg.pct_of_peak_sustained_active"));
  EXPECT_FALSE(has(c.section_metrics, "launch.block_size"));  // fields are not counters
  EXPECT_TRUE(c.metrics.empty());
  EXPECT_TRUE(c.passes.empty());
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_HAS(p.notes[0], "no counters named: collecting set basic (LaunchStats, Occupancy and "
                         "SpeedOfLight, ");
  EXPECT_HAS(p.notes[0], "--set none collects none");
  // range replay takes the default too
  EXPECT_EQ(plan_ok(cli({"--replay-mode", "range"})).runs[0].config.replay_mode, ReplayMode::kRange);
}

TEST(PlanSections, NoDefaultWhenCountersAreNamedOrApplicationReplayOrSetNone) {
  for (auto args : std::vector<std::vector<std::string>>{{"--pmc", "A"},
                                                         {"--metrics", "m"},
                                                         {"--set", "none"},
                                                         {"--replay-mode", "application"}}) {
    RunPlan p = plan_ok(cli(args));
    EXPECT_TRUE(p.notes.empty()) << args[0];
    EXPECT_TRUE(p.runs[0].config.section_metrics.empty()) << args[0];
    EXPECT_FALSE(p.runs[0].config.sections_default);
  }
  EXPECT_EQ(plan_ok(cli({"--set", "none"})).runs[0].config.replay_mode, ReplayMode::kApplication);
}

TEST(PlanSections, SetAndSectionsAddUpWithPmcGroups) {
  RunPlan p = plan_ok(cli({"--pmc", "A", "--set", "basic", "--section", "regex:^Memory",
                           "--section", "WarpStateStats"}));
  const ToolConfig& c = p.runs[0].config;
  EXPECT_EQ(c.replay_mode, ReplayMode::kRange);
  EXPECT_EQ(c.pmc_groups, (std::vector<std::vector<std::string>>{{"A"}}));
  EXPECT_TRUE(has(c.section_metrics, "dram__bytes_read.sum"));
  EXPECT_TRUE(has(c.section_metrics, "smsp__warp_issue_stalled_barrier_per_warp_active.pct"));
  EXPECT_TRUE(has(c.section_metrics, "gpu__time_duration.sum"));
  EXPECT_EQ(c.sections_label, "set basic and sections regex:^Memory, WarpStateStats");
  EXPECT_FALSE(c.sections_default);
  EXPECT_TRUE(p.notes.empty());
  // no duplicates although sections share metrics
  auto m = c.section_metrics;
  std::sort(m.begin(), m.end());
  EXPECT_EQ(std::adjacent_find(m.begin(), m.end()), m.end());
}

TEST(PlanSections, SourceCountersIsSkippedUntilItsDataExists) {
  RunPlan full = plan_ok(cli({"--set", "full"}));
  EXPECT_TRUE(full.notes.empty());  // silently, from a set
  EXPECT_FALSE(has(full.runs[0].config.section_metrics, "smsp__sass_branch_targets.sum"));
  RunPlan named = plan_ok(cli({"--section", "SourceCounters", "--section", "Occupancy"}));
  ASSERT_EQ(named.notes.size(), 1u);
  EXPECT_HAS(named.notes[0], "section SourceCounters needs source_counters data");
  EXPECT_HAS(named.notes[0], "it is skipped");
  EXPECT_FALSE(has(named.runs[0].config.section_metrics, "smsp__sass_branch_targets.sum"));
  EXPECT_TRUE(has(named.runs[0].config.section_metrics,
                  "sm__warps_active.avg.pct_of_peak_sustained_active"));
}

TEST(PlanSections, SectionFolderAddsSectionsAndSets) {
  RunPlan p = plan_ok(cli({"--section-folder", KREPLAY_TEST_SECTIONS_DIR, "--set", "host"}));
  EXPECT_EQ(p.runs[0].config.section_metrics,
            (std::vector<std::string>{"duration_ns", "ops", "bytes_read", "bytes_written",
                                      "threads_launched", "blocks_launched"}));
  // no counters named: the default set, looked up with the folder's sets too
  EXPECT_TRUE(plan_ok(cli({"--section-folder", KREPLAY_TEST_SECTIONS_DIR})).runs[0].config.sections_default);
  EXPECT_HAS(plan_error(cli({"--pmc", "A", "--section-folder", KREPLAY_TEST_SECTIONS_DIR})),
             "--section-folder adds section files, but no --set or --section picks one");
  EXPECT_HAS(plan_error(cli({"--section-folder", "/nonexistent/dir", "--set", "basic"})),
             "section folder /nonexistent/dir does not exist");
}

TEST(PlanSections, Rejections) {
  EXPECT_HAS(plan_error(cli({"--set", "basc"})), "unknown set \"basc\" (did you mean basic?)");
  EXPECT_HAS(plan_error(cli({"--section", "SpeedOfLite"})),
             "unknown section \"SpeedOfLite\" (did you mean SpeedOfLight?)");
  EXPECT_HAS(plan_error(cli({"--section", "regex:^Nope"})), "matches no section");
  std::string m = plan_error(cli({"--set", "basic", "--replay-mode", "application"}));
  EXPECT_HAS(m, "--set needs kernel or range replay");
  EXPECT_HAS(m, "drop --replay-mode application");
}

TEST(PlanSections, InputFileKeys) {
  InputFile f = yaml("jobs:\n  - set: basic\n    section: [WarpStateStats]\n  - kernel_trace: true\n");
  RunPlan p = plan_ok(cli({}), &f);
  ASSERT_EQ(p.runs.size(), 2u);
  EXPECT_EQ(p.runs[0].config.replay_mode, ReplayMode::kRange);
  EXPECT_TRUE(has(p.runs[0].config.section_metrics,
                  "smsp__warp_issue_stalled_barrier_per_warp_active.pct"));
  // a job without counters stays a trace-only run: no default set in input files
  EXPECT_TRUE(p.runs[1].config.section_metrics.empty());
  EXPECT_EQ(p.runs[1].config.replay_mode, ReplayMode::kApplication);
  EXPECT_TRUE(p.notes.empty());

  InputFile bad = yaml("jobs:\n  - set: bsic\n");
  EXPECT_HAS(plan_error(cli({}), &bad), "jobs.yaml:2:5: jobs[0].set: unknown set \"bsic\"");
  InputFile kernel = yaml("job_replay_mode: kernel\njobs:\n  - pmc: [A]\n  - set: basic\n");
  EXPECT_HAS(plan_error(cli({}), &kernel),
             "jobs[1].set: set cannot be a pass of job_replay_mode: kernel");
  InputFile kernel_cli = yaml("job_replay_mode: kernel\njobs:\n  - pmc: [A]\n");
  EXPECT_HAS(plan_error(cli({"--section", "Occupancy"}), &kernel_cli),
             "drop --section from the command line");
  InputFile rotation = yaml("jobs:\n  - pmc_groups: [[A], [B]]\n    set: basic\n");
  EXPECT_HAS(plan_error(cli({}), &rotation), "pmc_groups and set both give counters");
  InputFile conflict = yaml("jobs:\n  - set: full\n");
  EXPECT_HAS(plan_error(cli({"--set", "basic"}), &conflict),
             "set is \"full\" here but \"basic\" on the command line (--set)");
}

TEST(PlanSections, ListActions) {
  RunPlan sets = plan_ok(cli({"--list-sets"}));
  EXPECT_EQ(sets.action, PlanAction::kListSets);
  EXPECT_EQ(sets.section_folders, (std::vector<std::string>{KREPLAY_SECTIONS_DIR}));
  RunPlan sections =
      plan_ok(cli({"--list-sections", "--section-folder", KREPLAY_TEST_SECTIONS_DIR}));
  EXPECT_EQ(sections.action, PlanAction::kListSections);
  EXPECT_EQ(sections.section_folders.size(), 2u);
  auto r = parse_command_line(std::vector<std::string>{"kreplay", "--list-sets", "--", "./app"});
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.status().message(), "--list-sets runs no application");
}

}  // namespace
}  // namespace kreplay::cli
