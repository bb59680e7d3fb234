// Pins LegacyMetrics offline (no GPU, chip "GH100"): the counter-data prefix the legacy profiler
// API needs, legacy counter-data images sized for 1 and 64 ranges, the NVPW-built config image
// against ProfilerHost's (same pass count), and whether the host API reads an (empty) legacy image.
// Seen with CUPTI 13.0: the 10-pass set's legacy image is 896,436 bytes for 1 range and
// 57,077,316 for 64 -- the 875 KB and 54 MB the range profiler's cuptiRangeProfilerGetCounterDataSize
// gives the same set on the H200 (bench/cuda/README.md, pass_cost): the same counter-data layout.
#include "backends/cuda/cupti/legacy_host.hpp"

#include <gtest/gtest.h>

#include "backends/cuda/cupti/metric_sets.hpp"
#include "backends/cuda/cupti/profiler_host.hpp"

namespace kreplay::cupti {
namespace {

// Offline, cuptiProfilerCounterDataImageCalculateSize answers CUPTI_ERROR_NOT_INITIALIZED until
// CUPTI's profiler host side is up: a host object (cuptiProfilerHostInitialize) brings it up, as
// cuptiProfilerInitialize does on a device.
std::unique_ptr<LegacyMetrics> make(const std::vector<std::string>& metrics) {
  auto host = ProfilerHost::shared("GH100");
  EXPECT_TRUE(host.ok()) << host.status().message();
  auto r = LegacyMetrics::create("GH100", metrics);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : nullptr;
}

TEST(LegacyMetrics, OnePassSetHasPrefixAndImages) {
  auto lm = make(one_pass_sm_metrics());
  ASSERT_NE(lm, nullptr);
  EXPECT_FALSE(lm->raw_counters().empty());
  EXPECT_FALSE(lm->prefix().empty());
  auto one = lm->make_counter_data(1);
  ASSERT_TRUE(one.ok()) << one.status().message();
  auto many = lm->make_counter_data(64);
  ASSERT_TRUE(many.ok()) << many.status().message();
  EXPECT_FALSE(one->scratch.empty());
  EXPECT_GT(many->image.size(), one->image.size());
  std::printf("[ info ] 1-pass set: %zu raw counters, prefix %zu bytes, image 1 range %zu bytes "
              "(scratch %zu), 64 ranges %zu bytes (scratch %zu)\n",
              lm->raw_counters().size(), lm->prefix().size(), one->image.size(),
              one->scratch.size(), many->image.size(), many->scratch.size());
  EXPECT_TRUE(lm->reinitialize(*one).ok());
}

TEST(LegacyMetrics, TenPassSetImages) {
  auto lm = make(ten_pass_metrics());
  ASSERT_NE(lm, nullptr);
  for (uint32_t ranges : {1u, 64u}) {
    auto data = lm->make_counter_data(ranges);
    ASSERT_TRUE(data.ok()) << data.status().message();
    std::printf("[ info ] 10-pass set: %zu raw counters, prefix %zu bytes, image %u range(s) %zu "
                "bytes (scratch %zu)\n",
                lm->raw_counters().size(), lm->prefix().size(), ranges, data->image.size(),
                data->scratch.size());
  }
}

TEST(LegacyMetrics, NvpwConfigMatchesHostPassCount) {
  for (const auto& metrics : {one_pass_sm_metrics(), ten_pass_metrics()}) {
    auto lm = make(metrics);
    ASSERT_NE(lm, nullptr);
    auto nvpw = lm->config_image();
    ASSERT_TRUE(nvpw.ok()) << nvpw.status().message();
    auto host = ProfilerHost::shared("GH100");
    ASSERT_TRUE(host.ok()) << host.status().message();
    auto config = (*host)->build_config(metrics);
    ASSERT_TRUE(config.ok()) << config.status().message();
    std::printf("[ info ] %zu metrics: NVPW config %zu bytes %zu passes; host API config %zu bytes "
                "%zu passes; bytes %s\n",
                metrics.size(), nvpw->image.size(), nvpw->pass_count, config->image.size(),
                config->pass_count, nvpw->image == config->image ? "identical" : "differ");
    EXPECT_EQ(nvpw->pass_count, config->pass_count);
  }
  EXPECT_EQ(ProfilerHost::shared("GH100").value()->pass_count(one_pass_sm_metrics()).value(), 1u);
}

TEST(LegacyMetrics, HostApiReadsEmptyLegacyImage) {
  auto lm = make(ten_pass_metrics());
  ASSERT_NE(lm, nullptr);
  auto data = lm->make_counter_data(4);
  ASSERT_TRUE(data.ok()) << data.status().message();
  auto count = ProfilerHost::range_count(data->image);
  std::printf("[ info ] cuptiRangeProfilerGetCounterDataInfo on an empty legacy image: %s\n",
              count.ok() ? std::to_string(*count).c_str() : count.status().message().c_str());
  if (count.ok()) {
    EXPECT_EQ(*count, 0u);
  }
}

TEST(LegacyMetrics, BadMetricIsRejected) {
  auto r = LegacyMetrics::create("GH100", {"smsp__inst_executed_not_a_metric.sum"});
  EXPECT_FALSE(r.ok());
  std::printf("[ info ] bad metric: %s\n", r.ok() ? "accepted" : r.status().message().c_str());
}

}  // namespace
}  // namespace kreplay::cupti
