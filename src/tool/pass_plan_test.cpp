// Pins the profiler tool's pass plan on both kinds of agent.
#include "tool/pass_plan.hpp"

#include <gtest/gtest.h>

namespace kreplay::tool {
namespace {

struct Maker {
  std::vector<std::vector<std::string>> made;
  uint64_t hw_passes = 1;
  MakeConfig fn() {
    return [this](const std::vector<std::string>& names) -> Result<std::pair<uint64_t, uint64_t>> {
      for (const auto& n : names) {
        if (n == "bogus") return Error(KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND, "unknown counter 'bogus'");
      }
      made.push_back(names);
      return std::make_pair(uint64_t(made.size()), hw_passes);
    };
  }
};

config::ToolConfig groups(std::vector<std::vector<std::string>> g, bool timing_between = false) {
  config::ToolConfig c;
  c.pmc_groups = g;
  for (size_t i = 0; i < g.size(); ++i) {
    c.passes.push_back({config::PassKind::kCounters, static_cast<int32_t>(i), false});
    if (timing_between && i == 0) c.passes.push_back({config::PassKind::kTiming, -1, true});
  }
  return c;
}

TEST(PassPlan, HostDeviceGetsOneConfigPerGroupAndSplitsMetrics) {
  Maker m;
  auto c = groups({{"a", "b"}, {"c"}}, true);
  c.metrics = {"d", "e", "f"};
  auto p = plan_for_agent(c, 2, m.fn());
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->passes.size(), 5u);  // a+b, timing, c, d+e, f
  EXPECT_EQ(p->passes[0].kind, PlannedPass::Kind::kCounters);
  EXPECT_EQ(p->passes[1].kind, PlannedPass::Kind::kTiming);
  EXPECT_TRUE(p->passes[1].flush_cache);
  EXPECT_EQ(m.made, (std::vector<std::vector<std::string>>{{"a", "b"}, {"c"}, {"d", "e"}, {"f"}}));
  EXPECT_EQ(p->counters, (std::vector<std::string>{"a", "b", "c", "d", "e", "f"}));
}

TEST(PassPlan, CudaGetsOneConfigForEverythingOnItsScheduledPasses) {
  Maker m;
  m.hw_passes = 3;
  auto c = groups({{"a", "b"}, {"b", "c"}}, true);
  c.metrics = {"d"};
  auto p = plan_for_agent(c, 0, m.fn());
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(m.made.size(), 1u);
  EXPECT_EQ(m.made[0], (std::vector<std::string>{"a", "b", "c", "d"}));
  ASSERT_EQ(p->passes.size(), 4u);  // 3 counter passes where the first group was, then timing
  for (int i = 0; i < 3; ++i) EXPECT_EQ(p->passes[i].config, 1u);
  EXPECT_EQ(p->passes[3].kind, PlannedPass::Kind::kTiming);
}

// A launch that runs once (declined) is counted only where pass 0's config completes in one pass:
// on the host device every group is a config of its own; CUDA's one config of 3 hardware passes
// completes nothing in one.
TEST(PassPlan, OnlyAOnePassConfigCompletesInTheFirstPass) {
  Maker host;
  auto p = plan_for_agent(groups({{"a", "b"}, {"c"}}), 2, host.fn());
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(first_pass_completes(*p));
  Maker cuda;
  cuda.hw_passes = 3;
  p = plan_for_agent(groups({{"a", "b"}, {"c"}}), 0, cuda.fn());
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(first_pass_completes(*p));
  Maker one;
  one.hw_passes = 1;
  p = plan_for_agent(groups({{"a"}}), 0, one.fn());
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(first_pass_completes(*p));
  EXPECT_TRUE(first_pass_completes(AgentPlan{}));  // nothing counted at all
}

TEST(PassPlan, RotationAndErrorsNameTheGroup) {
  Maker m;
  config::ToolConfig c;
  c.rotation.groups = {{"a"}, {"b"}};
  auto p = plan_for_agent(c, 2, m.fn());
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->passes.empty());
  EXPECT_EQ(p->rotation.size(), 2u);

  auto bad = groups({{"a"}, {"bogus"}});
  auto e = plan_for_agent(bad, 2, m.fn());
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND);
  EXPECT_NE(e.status().message().find("group 2"), std::string::npos) << e.status().message();
}


TEST(PassPlan, SectionCountersJoinMetricsWithoutDuplicates) {
  Maker m;
  auto c = groups({{"a"}});
  c.metrics = {"b"};
  c.section_metrics = {"a", "c", "d"};
  auto p = plan_for_agent(c, 2, m.fn());
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->counters, (std::vector<std::string>{"a", "b", "c", "d"}));
  ASSERT_EQ(p->passes.size(), 3u);  // a, b+c, d
  EXPECT_EQ(m.made.back(), (std::vector<std::string>{"d"}));
  EXPECT_TRUE(p->sections_missing.empty());
}

TEST(PassPlan, SectionCountersTheAgentLacksAreLeftOut) {
  Maker m;
  config::ToolConfig c;
  c.section_metrics = {"bogus", "x"};
  c.sections_label = "set basic";
  auto p = plan_for_agent(c, 0, m.fn(), "GPU 0");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->counters, (std::vector<std::string>{"x"}));
  EXPECT_EQ(p->sections_missing, (std::vector<std::string>{"bogus"}));
  EXPECT_EQ(p->passes.size(), 1u);
}

TEST(PassPlan, NoSectionCounterAvailableMeansNoPass) {
  Maker m;
  config::ToolConfig c;
  c.section_metrics = {"bogus"};
  c.sections_default = true;
  auto p = plan_for_agent(c, 2, m.fn());
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->passes.empty());
  EXPECT_TRUE(p->counters.empty());
  EXPECT_EQ(p->sections_missing.size(), 1u);
}

TEST(PassPlan, AnUnknownMetricTheUserNamedIsStillAnError) {
  Maker m;
  config::ToolConfig c;
  c.metrics = {"bogus"};
  c.section_metrics = {"x"};
  EXPECT_FALSE(plan_for_agent(c, 0, m.fn()).ok());
}

config::PassSpec service(config::PassKind kind, int32_t after) {
  config::PassSpec s;
  s.kind = kind;
  s.after_counters = after;
  return s;
}

std::vector<config::PassKind> kinds(const AgentPlan& p) {
  std::vector<config::PassKind> out;
  for (const auto& pass : p.passes) out.push_back(pass.kind);
  return out;
}

TEST(PassPlan, CommandLineServicesGoAfterTheirCounterPasses) {
  using K = config::PassKind;
  Maker m;
  auto c = groups({{"a"}, {"b"}});
  c.metrics = {"d", "e", "f"};  // two more counter passes on the host device, after the groups
  c.passes.push_back(service(K::kPcSampling, config::PassSpec::kAfterAllCounters));
  c.passes.push_back(service(K::kSassMetrics, 1));
  c.passes.push_back(service(K::kTiming, 0));
  c.passes.push_back(service(K::kPmSampling, 1));  // after sass: both after counter pass 1
  auto p = plan_for_agent(c, 2, m.fn());
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(kinds(*p), (std::vector<K>{K::kTiming, K::kCounters, K::kSassMetrics, K::kPmSampling,
                                       K::kCounters, K::kCounters, K::kCounters, K::kPcSampling}));
  EXPECT_EQ(p->passes.back().label, "pc_sampling");
  // A position equal to the agent's counter passes is the end.
  auto few = groups({{"a"}});
  few.passes.push_back(service(K::kPcSampling, 1));
  auto q = plan_for_agent(few, 2, m.fn());
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(kinds(*q), (std::vector<K>{K::kCounters, K::kPcSampling}));
}

TEST(PassPlan, APositionPastTheCounterPassesIsRefused) {
  using K = config::PassKind;
  Maker m;
  auto few = groups({{"a"}});
  few.passes.push_back(service(K::kPcSampling, 99));
  auto q = plan_for_agent(few, 2, m.fn());
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(q.status().message(),
            "--pc-sampling-pass-position 99 is past the counter passes: the run has 1 counter "
            "pass on this device, so the largest position is 1; lower it, or drop "
            "--pc-sampling-pass-position to put the pass after all counter passes");
  // On CUDA the device's scheduled passes count: 3 of them allow 3, not 4.
  Maker cuda;
  cuda.hw_passes = 3;
  auto c = groups({{"a"}});
  c.passes.push_back(service(K::kTiming, 3));
  EXPECT_TRUE(plan_for_agent(c, 0, cuda.fn()).ok());
  c.passes.back() = service(K::kTiming, 4);
  auto r = plan_for_agent(c, 0, cuda.fn());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--timing-pass-position 4 is past the counter passes: the "
                                      "run has 3 counter passes on this device, so the largest "
                                      "position is 3"),
            std::string::npos)
      << r.status().message();
  // No counters at all (the sections are not on this device): only 0 fits.
  config::ToolConfig none;
  none.section_metrics = {"not_here"};
  none.sections_default = true;
  none.passes.push_back(service(K::kSassMetrics, 1));
  Maker host;
  auto s = plan_for_agent(none, 2, [&](const std::vector<std::string>&)
                                       -> Result<std::pair<uint64_t, uint64_t>> {
    return Error(KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND, "no such counter");
  });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--sass-metrics-pass-position 1 is past the counter "
                                      "passes: the run has 0 counter passes on this device, so "
                                      "the largest position is 0"),
            std::string::npos)
      << s.status().message();
  none.passes.back() = service(K::kSassMetrics, 0);
  EXPECT_TRUE(plan_for_agent(none, 2, [&](const std::vector<std::string>&)
                                          -> Result<std::pair<uint64_t, uint64_t>> {
                return Error(KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND, "no such counter");
              }).ok());
}

TEST(PassPlan, CommandLineServicesFollowTheScheduledCounterPassesOnCuda) {
  using K = config::PassKind;
  Maker m;
  m.hw_passes = 3;
  auto c = groups({{"a"}});
  c.passes.push_back(service(K::kPcSampling, config::PassSpec::kAfterAllCounters));
  c.passes.push_back(service(K::kSassMetrics, 2));
  auto p = plan_for_agent(c, 0, m.fn());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(kinds(*p), (std::vector<K>{K::kCounters, K::kCounters, K::kSassMetrics, K::kCounters,
                                       K::kPcSampling}));
}

}  // namespace
}  // namespace kreplay::tool
