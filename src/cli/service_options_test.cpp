// Pins the per-pass service options of the command line (service_options.hpp): what each flag
// gives, the one-line errors, and how the plan places the services' passes.
#include "cli/service_options.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli/plan_test_util.hpp"

namespace kreplay::cli {

using config::parse_tool_config;
using config::PassKind;
using config::PassSpec;
using config::serialize_tool_config;
using config::ServiceOptions;
using config::ToolConfig;

namespace {

using plan_testing::parse_cli;
using plan_testing::plan_error;
using plan_testing::plan_ok;

std::string parse_error(std::vector<std::string> args) {
  args.insert(args.begin(), "kreplay");
  args.push_back("--");
  args.push_back("./app");
  auto r = parse_command_line(args);
  EXPECT_FALSE(r.ok()) << "parsed";
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
  return r.status().message();
}

std::vector<PassKind> kinds(const ToolConfig& c) {
  std::vector<PassKind> out;
  for (const auto& p : c.passes) out.push_back(p.kind);
  return out;
}

TEST(ServiceOptions, EachFlagAddsItsPassWithItsSettings) {
  auto o =
      parse_cli({"--pm-sampling", "pm__ops,pm__bytes_read", "--pm-sampling-interval", "250",
                 "--pc-sampling", "--pc-sampling-period", "7", "--sass-metrics",
                 "smsp__sass_inst_executed", "--timing-pass", "--sass-metrics-pass-position", "2"});
  ASSERT_EQ(o.service_passes.size(), 4u);  // in a fixed order, whatever the command line's
  EXPECT_EQ(o.service_passes[0].kind, PassKind::kTiming);
  EXPECT_EQ(o.service_passes[1].kind, PassKind::kPcSampling);
  EXPECT_EQ(o.service_passes[2].kind, PassKind::kSassMetrics);
  EXPECT_EQ(o.service_passes[2].after_counters, 2);
  EXPECT_EQ(o.service_passes[3].kind, PassKind::kPmSampling);
  EXPECT_EQ(o.service_passes[3].after_counters, PassSpec::kAfterAllCounters);
  EXPECT_EQ(o.services.pc_sampling_period, 7u);
  EXPECT_EQ(o.services.sass_metrics, (std::vector<std::string>{"smsp__sass_inst_executed"}));
  EXPECT_EQ(o.services.pm_metrics, (std::vector<std::string>{"pm__ops", "pm__bytes_read"}));
  EXPECT_EQ(o.services.pm_interval_ns, 250u);
  // --source-counters is SASS metrics with the default set.
  auto d = parse_cli({"--source-counters"});
  ASSERT_EQ(d.service_passes.size(), 1u);
  EXPECT_EQ(d.service_passes[0].kind, PassKind::kSassMetrics);
  EXPECT_TRUE(d.services.sass_metrics.empty());
}

TEST(ServiceOptions, BadInputIsOneLineNamingTheFix) {
  EXPECT_HAS(parse_error({"--pc-sampling-period", "7"}), "add --pc-sampling");
  EXPECT_HAS(parse_error({"--pc-sampling", "--pc-sampling-period", "4"}), "from 5 to 31");
  EXPECT_HAS(parse_error({"--pc-sampling", "--pc-sampling-period", "x"}),
             "--pc-sampling-period 10");
  EXPECT_HAS(parse_error({"--pm-sampling-interval", "100"}), "add --pm-sampling");
  EXPECT_HAS(parse_error({"--pm-sampling", "pm__ops", "--pm-sampling-interval", "0"}),
             "--pm-sampling-interval");
  EXPECT_HAS(parse_error({"--sass-metrics", "a", "--source-counters"}), "give one of them");
  EXPECT_HAS(parse_error({"--pc-sampling-pass-position", "1"}), "add --pc-sampling");
  EXPECT_HAS(parse_error({"--pc-sampling", "--pc-sampling-pass-position", "-1"}),
             "--pc-sampling-pass-position");
}

TEST(ServiceOptions, ServicesAfterCountersInKernelReplayFirstLaunchOnly) {
  auto plan = plan_ok(parse_cli({"--pmc", "A", "--pc-sampling", "--source-counters"}));
  ASSERT_EQ(plan.runs.size(), 1u);
  const ToolConfig& c = plan.runs[0].config;
  EXPECT_EQ(c.replay_mode, ReplayMode::kKernel);
  EXPECT_EQ(kinds(c), (std::vector<PassKind>{PassKind::kCounters, PassKind::kPcSampling,
                                             PassKind::kSassMetrics}));
  EXPECT_EQ(c.filters.iteration_range, "[1]");
  bool said = false;
  for (const auto& n : plan.notes) said |= n.find("first launch only") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(ServiceOptions, AFilterOrRangeOverridesFirstLaunchOnly) {
  for (std::vector<std::string> filter :
       {std::vector<std::string>{"--kernel-iteration-range", "2-3"},
        std::vector<std::string>{"--kernel-include-regex", "scale"}}) {
    filter.push_back("--pc-sampling");
    auto plan = plan_ok(parse_cli(filter));
    ASSERT_EQ(plan.runs.size(), 1u);
    EXPECT_NE(plan.runs[0].config.filters.iteration_range, "[1]");
    for (const auto& n : plan.notes) EXPECT_EQ(n.find("first launch only"), std::string::npos);
  }
  // PM sampling and the timing pass are not per-instruction: every launch.
  auto pm = plan_ok(parse_cli({"--pm-sampling", "pm__ops", "--timing-pass"}));
  EXPECT_EQ(pm.runs[0].config.filters.iteration_range, "");
  EXPECT_EQ(pm.runs[0].config.replay_mode, ReplayMode::kKernel);
}

TEST(ServiceOptions, OneServiceAloneIsOneRunWithoutReplayAndNoDefaultSet) {
  auto plan = plan_ok(parse_cli({"--pc-sampling"}));
  ASSERT_EQ(plan.runs.size(), 1u);
  const ToolConfig& c = plan.runs[0].config;
  EXPECT_EQ(kinds(c), (std::vector<PassKind>{PassKind::kPcSampling}));
  EXPECT_EQ(c.replay_mode, ReplayMode::kApplication);
  EXPECT_TRUE(c.section_metrics.empty());  // no default set basic
}

TEST(ServiceOptions, RangeReplayKeepsServicesOffTheRangesFirstPass) {
  // Range replay named: kept, services after the counters.
  auto with_counters =
      plan_ok(parse_cli({"--pmc", "A", "--pc-sampling", "--replay-mode", "range"}));
  const ToolConfig& c = with_counters.runs[0].config;
  EXPECT_EQ(c.replay_mode, ReplayMode::kRange);
  EXPECT_EQ(kinds(c), (std::vector<PassKind>{PassKind::kCounters, PassKind::kPcSampling}));
  // No counters: a timing pass holds the range's first pass (the application's own run).
  auto alone = plan_ok(parse_cli({"--source-counters", "--replay-mode", "range"}));
  EXPECT_EQ(alone.runs[0].config.replay_mode, ReplayMode::kRange);
  EXPECT_EQ(kinds(alone.runs[0].config),
            (std::vector<PassKind>{PassKind::kTiming, PassKind::kSassMetrics}));
  // A service put on that first pass is refused, naming the option.
  EXPECT_HAS(plan_error(parse_cli({"--pmc", "A", "--pm-sampling", "pm__ops",
                                   "--pm-sampling-pass-position", "0", "--replay-mode", "range"})),
             "--pm-sampling-pass-position 0 puts --pm-sampling on a range's first pass");
  // auto still picks kernel replay for services.
  auto automatic = plan_ok(parse_cli({"--pmc", "A", "--pc-sampling"}));
  EXPECT_EQ(automatic.runs[0].config.replay_mode, ReplayMode::kKernel);
}

TEST(ServiceOptions, ModesThatCannotConfineAPassAreRejected) {
  EXPECT_HAS(
      plan_error(parse_cli({"--pmc", "A", "--source-counters", "--replay-mode", "application"})),
      "--source-counters cannot be confined to a pass in --replay-mode application");
  // Kernel replay named without counters is fine when a service asks for the passes.
  auto plan = plan_ok(parse_cli({"--pc-sampling", "--timing-pass", "--replay-mode", "kernel"}));
  EXPECT_EQ(plan.runs[0].config.replay_mode, ReplayMode::kKernel);
}

TEST(ServiceOptions, APositionPastARunWithoutCountersIsRefused) {
  // No counters: no counter pass on any device, so the command knows 0 is the largest position.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--pc-sampling", "--pc-sampling-pass-position", "99"},
           {"--set", "none", "--pc-sampling", "--pc-sampling-pass-position", "1"},
           {"--timing-pass", "--pc-sampling", "--pc-sampling-pass-position", "1"}}) {
    EXPECT_EQ(plan_error(parse_cli(args)),
              fmt::format("--pc-sampling-pass-position {} is past the counter passes: the run "
                          "collects no counters, so the largest position is 0; drop "
                          "--pc-sampling-pass-position",
                          args[args.size() - 1]));
  }
  EXPECT_HAS(plan_error(parse_cli({"--sass-metrics", "smsp__sass_inst_executed",
                                   "--sass-metrics-pass-position", "2", "--replay-mode", "range"})),
             "--sass-metrics-pass-position 2 is past the counter passes");
  // Position 0, or none: fine. With counters the device decides (the tool checks).
  plan_ok(parse_cli({"--pc-sampling", "--pc-sampling-pass-position", "0"}));
  plan_ok(parse_cli({"--pmc", "A", "--pc-sampling", "--pc-sampling-pass-position", "99"}));
  plan_ok(parse_cli({"--pc-sampling", "--pc-sampling-pass-position", "99", "--set", "basic"}));
}

TEST(ServiceOptions, TheToolConfigCarriesTheServices) {
  auto plan = plan_ok(parse_cli({"--pmc", "A", "--pm-sampling", "pm__ops", "--pm-sampling-interval",
                                 "64", "--pm-sampling-pass-position", "0"}));
  const ToolConfig& c = plan.runs[0].config;
  auto back = parse_tool_config(serialize_tool_config(c));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, c);
  EXPECT_EQ(back->services.pm_interval_ns, 64u);
  EXPECT_EQ(back->passes.back().after_counters, 0);
}

}  // namespace
}  // namespace kreplay::cli
