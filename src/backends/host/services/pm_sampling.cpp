// PM sampling on the host device: every interval of the probe's virtual time (1 cycle = 1 ns),
// what each metric did during that interval.
#include <fmt/format.h>

#include "backends/host/services/host_service.hpp"

namespace kreplay::hostrt {
namespace {

constexpr uint64_t kDefaultIntervalNs = 1000;

struct MetricSpec {
  const char* name;
  const char* description;
  uint64_t PmPoint::*field;
};

constexpr MetricSpec kMetrics[] = {
    {"pm__bytes_read", "Bytes loaded during the interval.", &PmPoint::bytes_read},
    {"pm__bytes_written", "Bytes stored during the interval.", &PmPoint::bytes_written},
    {"pm__ops", "Operations counted with count_ops during the interval.", &PmPoint::ops},
    {"pm__inst_executed", "Thread-level instructions executed during the interval.",
     &PmPoint::instructions},
};

class HostPmSampling final : public HostPassService {
 public:
  kreplay_pass_service_kind_t kind() const override { return KREPLAY_PASS_SERVICE_PM_SAMPLING; }

  std::vector<device::ServiceMetric> metrics() const override {
    std::vector<device::ServiceMetric> out;
    for (const auto& m : kMetrics) out.push_back({m.name, m.description, false});
    return out;
  }

  Status configure(device::ServiceSettings& settings) const override {
    if (settings.metrics.empty()) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   "PM sampling needs at least one metric (list them with --list-avail)");
    }
    if (settings.period == 0) settings.period = kDefaultIntervalNs;
    return check_metrics(settings.metrics, "PM sampling");
  }

 protected:
  uint64_t pm_interval(const device::ServiceSettings& settings) const override {
    return settings.period;
  }

  std::vector<device::ServiceSample> samples(const Probe& probe,
                                             const std::string& function) const override {
    std::vector<device::ServiceSample> out;
    PmPoint prev;
    for (const auto& point : probe.pm_points()) {
      for (const auto& metric : probe.settings().metrics) {
        for (const auto& m : kMetrics) {
          if (metric != m.name) continue;
          device::ServiceSample s;
          s.function = function;
          s.name = metric;
          s.time_ns = point.time_ns;
          s.value = static_cast<double>(point.*m.field - prev.*m.field);
          out.push_back(std::move(s));
        }
      }
      prev = point;
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<HostPassService> make_host_pm_sampling() {
  return std::make_unique<HostPmSampling>();
}

}  // namespace kreplay::hostrt
