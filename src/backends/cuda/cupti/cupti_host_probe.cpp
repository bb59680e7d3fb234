// cupti_host_probe: what CUPTI's host API says about a chip, with no GPU. A developer tool, not
// installed.
//
//   cupti_host_probe                              supported chips, GH100 metric counts
//   cupti_host_probe --chip AD102                 that chip's metric counts
//   cupti_host_probe dram__bytes_read.sum ...     pass count and config image size of the set
//   cupti_host_probe --list [--chip X]            every base metric: kind, unit, description
//   cupti_host_probe --ten                        the pinned kTenPassMetrics set
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/cupti/metric_sets.hpp"
#include "backends/cuda/cupti/profiler_host.hpp"

namespace {

using kreplay::cupti::ProfilerHost;

const char* kind(kreplay_counter_value_type_t t) {
  switch (t) {
    case KREPLAY_COUNTER_VALUE_TYPE_COUNT:
      return "counter";
    case KREPLAY_COUNTER_VALUE_TYPE_RATIO:
      return "ratio";
    case KREPLAY_COUNTER_VALUE_TYPE_THROUGHPUT:
      return "throughput";
    default:
      return "?";
  }
}

int fail(const kreplay::Status& s) {
  std::fprintf(stderr, "==KREPLAY== error: %s\n", s.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string chip = "GH100";
  bool list = false;
  std::vector<std::string> metrics;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--chip") && i + 1 < argc) {
      chip = argv[++i];
    } else if (!std::strcmp(argv[i], "--list")) {
      list = true;
    } else if (!std::strcmp(argv[i], "--ten")) {
      for (const char* m : kreplay::cupti::kTenPassMetrics) metrics.emplace_back(m);
    } else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::printf("usage: %s [--chip CHIP] [--list] [--ten] [metric ...]\n", argv[0]);
      return 0;
    } else {
      metrics.emplace_back(argv[i]);
    }
  }

  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  auto chips = ProfilerHost::supported_chips();
  if (!chips.ok()) return fail(chips.status());
  double chips_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("supported chips (%zu, %.1f ms):", chips->size(), chips_ms);
  for (const auto& c : *chips) std::printf(" %s", c.c_str());
  std::printf("\n");

  auto host = ProfilerHost::create(chip);
  if (!host.ok()) return fail(host.status());
  std::printf("%s: host object initialized in %.2f ms\n", chip.c_str(), (*host)->init_ms());

  t0 = Clock::now();
  auto infos = (*host)->list_metrics();
  if (!infos.ok()) return fail(infos.status());
  double list_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  size_t counts[KREPLAY_COUNTER_VALUE_TYPE_LAST] = {};
  size_t full = 0;
  size_t described = 0;
  for (const auto& m : *infos) {
    ++counts[m.type];
    full += m.suffixes.size();
    described += !m.description.empty();
  }
  std::printf(
      "%s: %zu base metrics (%zu counters, %zu ratios, %zu throughputs; %zu with a description), "
      "%zu full names; listed in %.1f ms\n",
      chip.c_str(), infos->size(), counts[KREPLAY_COUNTER_VALUE_TYPE_COUNT],
      counts[KREPLAY_COUNTER_VALUE_TYPE_RATIO], counts[KREPLAY_COUNTER_VALUE_TYPE_THROUGHPUT],
      described, full, list_ms);
  if (list) {
    for (const auto& m : *infos) {
      std::printf("%-70s %-10s %-12s %s\n", m.name.c_str(), kind(m.type), m.unit.c_str(),
                  m.description.c_str());
    }
  }

  if (!metrics.empty()) {
    t0 = Clock::now();
    auto config = (*host)->build_config(metrics);
    if (!config.ok()) return fail(config.status());
    double build_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::printf("%zu metric(s): %zu pass(es), config image %zu bytes, built in %.1f ms\n",
                metrics.size(), config->pass_count, config->image.size(), build_ms);
    for (const auto& m : metrics) {
      auto one = ProfilerHost::create(chip);
      if (!one.ok()) return fail(one.status());
      auto c = (*one)->build_config({m});
      if (!c.ok()) return fail(c.status());
      std::printf("  %-70s %zu pass(es), %zu bytes\n", m.c_str(), c->pass_count, c->image.size());
    }
  }
  return 0;
}
