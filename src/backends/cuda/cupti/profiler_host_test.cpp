// Pins ProfilerHost offline (no GPU): chips, the GH100 metric catalog, pass counts CUPTI 13.0
// gives the sets measured on the H200, name validation with suggestions, and config images that
// are identical when built twice (so they can be cached).
#include "backends/cuda/cupti/profiler_host.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <string>
#include <vector>
#include <thread>

#include "backends/cuda/cupti/metric_sets.hpp"
#include "backends/cuda/cupti/cupti_common.hpp"

namespace kreplay::cupti {
namespace {

ProfilerHost& gh100() {
  static std::shared_ptr<ProfilerHost> host = [] {
    auto h = ProfilerHost::shared("GH100");
    if (!h.ok()) {
      ADD_FAILURE() << h.status().message();
      std::abort();
    }
    return *h;
  }();
  return *host;
}

size_t passes(const std::vector<std::string>& metrics) {
  auto r = gh100().build_config(metrics);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return 0;
  std::printf("[ info ] %zu metric(s) starting %s: %zu pass(es), config image %zu bytes\n",
              metrics.size(), metrics[0].c_str(), r->pass_count, r->image.size());
  EXPECT_EQ(r->chip, "GH100");
  EXPECT_EQ(r->metrics, metrics);
  EXPECT_FALSE(r->image.empty());
  return r->pass_count;
}

TEST(ProfilerHost, SupportedChipsIncludeGH100) {
  auto chips = ProfilerHost::supported_chips();
  ASSERT_TRUE(chips.ok()) << chips.status().message();
  for (const char* chip : {"GH100", "GA100", "AD102", "GB100", "TU102"}) {
    EXPECT_NE(std::find(chips->begin(), chips->end(), chip), chips->end()) << chip;
  }
}

TEST(ProfilerHost, UnknownChipIsRejectedWithSuggestion) {
  auto host = ProfilerHost::create("GH101");
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.status().code(), KREPLAY_STATUS_ERROR_NOT_AVAILABLE);
  EXPECT_NE(host.status().message().find("'GH101'"), std::string::npos);
  EXPECT_NE(host.status().message().find("GH100"), std::string::npos) << host.status().message();
  EXPECT_EQ(ProfilerHost::create("").status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
}

TEST(ProfilerHost, OfflineHostInitializes) {
  auto host = ProfilerHost::create("GH100");
  ASSERT_TRUE(host.ok()) << host.status().message();
  EXPECT_TRUE((*host)->offline());
  EXPECT_EQ((*host)->chip(), "GH100");
  EXPECT_GT((*host)->init_ms(), 0.0);
  std::printf("[ info ] GH100 host object initialized in %.2f ms\n", (*host)->init_ms());
}

TEST(ProfilerHost, SharedHostIsOnePerChip) {
  auto a = ProfilerHost::shared("GH100");
  auto b = ProfilerHost::shared("GH100");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
}

TEST(ProfilerHost, GH100ListsBaseMetricsWithDescriptions) {
  auto metrics = gh100().list_metrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  EXPECT_GE(metrics->size(), 3000u);
  size_t described = 0;
  size_t by_type[KREPLAY_COUNTER_VALUE_TYPE_LAST] = {};
  for (const auto& m : *metrics) {
    ASSERT_FALSE(m.name.empty());
    ASSERT_FALSE(m.suffixes.empty()) << m.name;
    ASSERT_GT(m.type, KREPLAY_COUNTER_VALUE_TYPE_NONE) << m.name;
    described += !m.description.empty();
    ++by_type[m.type];
  }
  std::printf(
      "[ info ] GH100: %zu base metrics: %zu counters, %zu ratios, %zu throughputs, %zu "
      "described\n",
      metrics->size(), by_type[KREPLAY_COUNTER_VALUE_TYPE_COUNT],
      by_type[KREPLAY_COUNTER_VALUE_TYPE_RATIO], by_type[KREPLAY_COUNTER_VALUE_TYPE_THROUGHPUT],
      described);
  EXPECT_GE(described, 3000u);
  EXPECT_GT(by_type[KREPLAY_COUNTER_VALUE_TYPE_COUNT], 3000u);
  EXPECT_GT(by_type[KREPLAY_COUNTER_VALUE_TYPE_RATIO], 100u);
  EXPECT_GT(by_type[KREPLAY_COUNTER_VALUE_TYPE_THROUGHPUT], 40u);

  auto find = [&](const std::string& name) -> const MetricInfo* {
    for (const auto& m : *metrics) {
      if (m.name == name) return &m;
    }
    return nullptr;
  };
  const MetricInfo* dram = find("dram__bytes_read");
  ASSERT_NE(dram, nullptr);
  EXPECT_EQ(dram->type, KREPLAY_COUNTER_VALUE_TYPE_COUNT);
  EXPECT_EQ(dram->unit, "byte");
  EXPECT_EQ(dram->hw_unit, "dram");
  EXPECT_NE(dram->description.find("DRAM"), std::string::npos);
  for (const char* s :
       {".sum", ".avg", ".max", ".min", ".sum.per_second", ".avg.pct_of_peak_sustained_elapsed"}) {
    EXPECT_NE(std::find(dram->suffixes.begin(), dram->suffixes.end(), s), dram->suffixes.end())
        << s;
  }
  const MetricInfo* sm = find("sm__throughput");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(sm->type, KREPLAY_COUNTER_VALUE_TYPE_THROUGHPUT);
  EXPECT_EQ(sm->unit, "percent");
  const MetricInfo* hit = find("l1tex__t_sector_hit_rate");
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->type, KREPLAY_COUNTER_VALUE_TYPE_RATIO);
  EXPECT_NE(std::find(hit->suffixes.begin(), hit->suffixes.end(), ".pct"), hit->suffixes.end());

  // Unprefixed names come first.
  auto first_prefixed = std::find_if(metrics->begin(), metrics->end(), [](const MetricInfo& m) {
    return m.name.find('.') != std::string::npos;
  });
  EXPECT_TRUE(std::none_of(first_prefixed, metrics->end(), [](const MetricInfo& m) {
    return m.name.find('.') == std::string::npos;
  }));
}

TEST(ProfilerHost, EveryFullNameResolves) {
  auto names = gh100().list_metric_names_full();
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_GT(names->size(), 100000u);
  std::printf("[ info ] GH100: %zu full metric names\n", names->size());
  EXPECT_NE(std::find(names->begin(), names->end(), "dram__bytes_read.sum"), names->end());
  for (size_t i = 0; i < names->size(); i += 97) {
    auto r = gh100().resolve((*names)[i]);
    ASSERT_TRUE(r.ok()) << (*names)[i] << ": " << r.status().message();
    EXPECT_EQ(r->base + r->suffix, (*names)[i]);
  }
}

TEST(ProfilerHost, ResolveSplitsBaseAndSuffix) {
  auto r = gh100().resolve("dram__bytes_read.sum.per_second");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->base, "dram__bytes_read");
  EXPECT_EQ(r->suffix, ".sum.per_second");
  EXPECT_EQ(r->type, KREPLAY_COUNTER_VALUE_TYPE_COUNT);

  // PM-unit prefixed variants have dots in the base name; CUPTI accepts them.
  auto p = gh100().resolve("TriageCompute.sm__throughput.avg.pct_of_peak_sustained_elapsed");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->base, "TriageCompute.sm__throughput");
  EXPECT_EQ(p->type, KREPLAY_COUNTER_VALUE_TYPE_THROUGHPUT);
  EXPECT_GE(passes({"CTC.TriageCompute.ctc__rx_bytes.sum"}), 1u);
}

TEST(ProfilerHost, PassCountsMatchTheH200Measurements) {
  EXPECT_EQ(passes({"dram__bytes_read.sum", "dram__bytes_write.sum"}), 1u);
  EXPECT_EQ(passes({"sm__cycles_elapsed.max", "smsp__inst_executed.sum"}), 1u);
  EXPECT_EQ(passes({"dram__bytes_read.sum", "dram__bytes_write.sum", "sm__cycles_elapsed.max",
                    "smsp__inst_executed.sum"}),
            1u);
  EXPECT_EQ(passes({"sm__throughput.avg.pct_of_peak_sustained_elapsed"}), 8u);
  auto p = gh100().pass_count({"sm__throughput.avg.pct_of_peak_sustained_elapsed"});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, 8u);
}

TEST(ProfilerHost, TenPassMetricSet) {
  auto metrics = ten_pass_metrics();
  EXPECT_EQ(metrics.size(), 16u);
  EXPECT_EQ(passes(metrics), kTenPassMetricsPassesGH100);
  EXPECT_EQ(kTenPassMetricsPassesGH100, 10u);
}

// The GPU scripts read the set from tests/gpu/ten_pass_metrics.txt: it is this one, in order.
TEST(ProfilerHost, TheScriptsTenPassSetIsThisOne) {
  std::ifstream in(KREPLAY_TEN_PASS_FILE);
  ASSERT_TRUE(in) << KREPLAY_TEN_PASS_FILE;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  EXPECT_EQ(lines, ten_pass_metrics());
}

// A user the driver does not let profile (NVreg_RestrictProfilingToAdminUsers=1, the driver's
// default) gets one line that names the problem and the fix. The H200 here allows every user
// (RmProfilingAdminOnly: 0), so the GPU run cannot provoke it: pinned on the message itself.
TEST(ProfilerHost, CountersNotPermittedIsOneLineWithTheFix) {
  Status s = cupti_status(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
                          "cuptiProfilerGetCounterAvailability(&params)");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), KREPLAY_STATUS_ERROR_NOT_AVAILABLE);
  const std::string& m = s.message();
  EXPECT_EQ(m.rfind("cuptiProfilerGetCounterAvailability failed: ", 0), 0u) << m;
  EXPECT_NE(m.find("counters not permitted"), std::string::npos) << m;
  EXPECT_NE(m.find("run as root or set NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos)
      << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(ProfilerHost, TenPassSmMetricSet) {
  auto metrics = ten_pass_sm_metrics();
  EXPECT_EQ(metrics.size(), 28u);
  EXPECT_EQ(passes(metrics), 10u);
}

TEST(ProfilerHost, UnknownMetricSuggestsCloseNames) {
  auto r = gh100().build_config({"dram__byte_read.sum"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("'dram__byte_read.sum'"), std::string::npos) << m;
  EXPECT_NE(m.find("'dram__bytes_read.sum'"), std::string::npos) << m;
  std::printf("[ info ] %s\n", m.c_str());

  // Upper case and a missing suffix still find the metric.
  auto upper = gh100().resolve("DRAM__BYTES_READ.SUM");
  ASSERT_FALSE(upper.ok());
  EXPECT_NE(upper.status().message().find("'dram__bytes_read.sum'"), std::string::npos)
      << upper.status().message();

  auto nothing = gh100().resolve("zzzzzzzzzzzzzzzzzzzzzzzz.sum");
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.status().code(), KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND);
}

TEST(ProfilerHost, BadSuffixExplainsTheValidOnes) {
  auto typo = gh100().build_config({"dram__bytes_read.summ"});
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.status().code(), KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND);
  const std::string& m = typo.status().message();
  std::printf("[ info ] %s\n", m.c_str());
  EXPECT_NE(m.find("'.summ'"), std::string::npos) << m;
  EXPECT_NE(m.find("'dram__bytes_read.sum'"), std::string::npos) << m;
  EXPECT_NE(m.find(".pct_of_peak_sustained_elapsed"), std::string::npos) << m;
  EXPECT_NE(m.find("rollup"), std::string::npos) << m;

  auto bare = gh100().resolve("dram__bytes_read");
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.status().message().find("needs a suffix"), std::string::npos)
      << bare.status().message();

  auto ratio = gh100().resolve("l1tex__t_sector_hit_rate.sum");
  ASSERT_FALSE(ratio.ok());
  const std::string& rm = ratio.status().message();
  std::printf("[ info ] %s\n", rm.c_str());
  EXPECT_NE(rm.find(".pct"), std::string::npos) << rm;
  EXPECT_NE(rm.find(".ratio"), std::string::npos) << rm;
  EXPECT_NE(rm.find("ratio 'l1tex__t_sector_hit_rate'"), std::string::npos) << rm;

  auto throughput = gh100().resolve("sm__throughput.avg");
  ASSERT_FALSE(throughput.ok());
  const std::string& tm = throughput.status().message();
  std::printf("[ info ] %s\n", tm.c_str());
  EXPECT_NE(tm.find("followed by"), std::string::npos) << tm;
  EXPECT_NE(tm.find(".pct_of_peak_sustained_elapsed"), std::string::npos) << tm;
}

TEST(ProfilerHost, ValidateReportsEveryBadName) {
  Status s = gh100().validate({"dram__bytes_read.sum", "dram__byte_read.sum", "sm__foo.sum"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND);
  EXPECT_NE(s.message().find("dram__byte_read.sum"), std::string::npos);
  EXPECT_NE(s.message().find("sm__foo.sum"), std::string::npos);
  EXPECT_TRUE(gh100().validate({"dram__bytes_read.sum"}).ok());
  EXPECT_EQ(gh100().build_config({}).status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
}

TEST(ProfilerHost, ConfigImageIsIdenticalWhenBuiltTwice) {
  auto metrics = ten_pass_metrics();
  auto a = ProfilerHost::create("GH100");
  auto b = ProfilerHost::create("GH100");
  ASSERT_TRUE(a.ok() && b.ok());
  auto ca = (*a)->build_config(metrics);
  auto cb = (*b)->build_config(metrics);
  ASSERT_TRUE(ca.ok() && cb.ok());
  EXPECT_EQ(ca->image, cb->image);  // two CUPTI host objects, same bytes
  EXPECT_EQ(ca->pass_count, cb->pass_count);

  auto again = (*a)->build_config(metrics);  // from the cache
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->image, ca->image);
  ProfilerHost::Stats stats = (*a)->stats();
  EXPECT_EQ(stats.configs_built, 1u);
  EXPECT_EQ(stats.config_cache_hits, 1u);
  EXPECT_EQ(stats.host_objects, 2u);  // base + the config's own

  // A different order is a different list: built, not mistaken for the cached one.
  std::vector<std::string> reversed(metrics.rbegin(), metrics.rend());
  auto cr = (*a)->build_config(reversed);
  ASSERT_TRUE(cr.ok());
  EXPECT_EQ(cr->pass_count, ca->pass_count);
  EXPECT_EQ((*a)->stats().configs_built, 2u);
}

TEST(ProfilerHost, EvaluateNeedsACounterDataImage) {
  auto r = gh100().evaluate({}, 0, {"dram__bytes_read.sum"});
  EXPECT_EQ(r.status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ProfilerHost::range_count({}).status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ProfilerHost::range_name({}, 0).status().code(), KREPLAY_STATUS_ERROR_INVALID_ARGUMENT);
}

TEST(ProfilerHost, ConcurrentUseIsSafe) {
  auto host = ProfilerHost::create("GH100");
  ASSERT_TRUE(host.ok());
  ProfilerHost& h = **host;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  const std::vector<std::vector<std::string>> sets = {
      {"dram__bytes_read.sum", "dram__bytes_write.sum"},
      {"sm__cycles_elapsed.max", "smsp__inst_executed.sum"},
      {"lts__t_sector_hit_rate.pct"},
      {"dram__bytes_read.sum", "dram__bytes_write.sum"},
  };
  for (size_t t = 0; t < sets.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) {
        auto p = h.pass_count(sets[t]);
        if (!p.ok() || *p == 0) ++failures;
        if (!h.resolve("dram__bytes_read.sum").ok()) ++failures;
        if (h.resolve("dram__byte_read.sum").ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(h.stats().configs_built, 3u);
}

}  // namespace
}  // namespace kreplay::cupti
