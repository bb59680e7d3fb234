// SASS metrics on the host device: exact per-instruction counts from the probe (one value per
// instruction and metric; zero values of the per-kind metrics are left out).
#include "backends/host/services/host_service.hpp"

namespace kreplay::hostrt {
namespace {

struct MetricSpec {
  const char* name;
  const char* description;
};

constexpr MetricSpec kMetrics[] = {
    {"smsp__sass_inst_executed", "Warp-level executions of the instruction."},
    {"smsp__sass_thread_inst_executed", "Thread-level executions of the instruction."},
    {"smsp__sass_inst_executed_op_global_ld", "Warp-level executions of a global load."},
    {"smsp__sass_inst_executed_op_global_st", "Warp-level executions of a global store."},
    {"smsp__sass_inst_executed_op_global_atom", "Warp-level executions of a global atomic."},
};

double value_of(const std::string& metric, const ProbeSite& site) {
  const auto warp = static_cast<double>(site.warp_executions);
  if (metric == "smsp__sass_inst_executed") return warp;
  if (metric == "smsp__sass_thread_inst_executed")
    return static_cast<double>(site.thread_executions);
  if (metric == "smsp__sass_inst_executed_op_global_ld")
    return site.op == ProbeOp::kLoad ? warp : 0;
  if (metric == "smsp__sass_inst_executed_op_global_st")
    return site.op == ProbeOp::kStore ? warp : 0;
  if (metric == "smsp__sass_inst_executed_op_global_atom")
    return site.op == ProbeOp::kAtomic ? warp : 0;
  return 0;
}

class HostSassMetrics final : public HostPassService {
 public:
  kreplay_pass_service_kind_t kind() const override { return KREPLAY_PASS_SERVICE_SASS_METRICS; }

  std::vector<device::ServiceMetric> metrics() const override {
    std::vector<device::ServiceMetric> out;
    for (const auto& m : kMetrics) out.push_back({m.name, m.description, true});
    return out;
  }

  Status configure(device::ServiceSettings& settings) const override {
    if (settings.period != 0) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   "SASS metrics take no period: they count every execution");
    }
    if (settings.metrics.empty()) {
      for (const auto& m : metrics()) {
        if (m.in_default_set) settings.metrics.push_back(m.name);
      }
    }
    return check_metrics(settings.metrics, "SASS");
  }

 protected:
  std::vector<device::ServiceSample> samples(const Probe& probe,
                                             const std::string& function) const override {
    std::vector<device::ServiceSample> out;
    for (const auto& site : probe.sites()) {
      for (const auto& metric : probe.settings().metrics) {
        const double v = value_of(metric, site);
        const bool always =
            metric == "smsp__sass_inst_executed" || metric == "smsp__sass_thread_inst_executed";
        if (v == 0 && !always) continue;
        auto s = at_site(site, function);
        s.name = metric;
        s.value = v;
        out.push_back(std::move(s));
      }
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<HostPassService> make_host_sass_metrics() {
  return std::make_unique<HostSassMetrics>();
}

}  // namespace kreplay::hostrt
