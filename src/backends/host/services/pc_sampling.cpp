// PC sampling on the host device: per instruction, the samples the probe's virtual clock gave it
// (one every 2^period_log2 cycles), under the stall reason of its kind. Like CUDA's, it samples
// only where it was prepared before the first window (HostPassService::needs_prepare).
#include <fmt/format.h>

#include "backends/host/services/host_service.hpp"

namespace kreplay::hostrt {
namespace {

constexpr uint32_t kDefaultPeriodLog2 = 10;

class HostPcSampling final : public HostPassService {
 public:
  kreplay_pass_service_kind_t kind() const override { return KREPLAY_PASS_SERVICE_PC_SAMPLING; }

  std::vector<device::ServiceMetric> metrics() const override {
    std::vector<device::ServiceMetric> out;
    for (ProbeOp op : {ProbeOp::kLoad, ProbeOp::kStore, ProbeOp::kAtomic, ProbeOp::kOps}) {
      out.push_back({Probe::stall_reason(op),
                     fmt::format("Stall reason of samples taken at {} (host device).",
                                 op == ProbeOp::kLoad     ? "a load"
                                 : op == ProbeOp::kStore  ? "a store"
                                 : op == ProbeOp::kAtomic ? "an atomic"
                                                          : "a counted operation"),
                     true});
    }
    return out;
  }

  Status configure(device::ServiceSettings& settings) const override {
    if (!settings.metrics.empty()) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   "PC sampling takes no metrics: every stall reason is sampled");
    }
    if (settings.period == 0) settings.period = kDefaultPeriodLog2;
    if (settings.period < 5 || settings.period > 31) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("PC sampling period 2^{} cycles is out of range; use 5 to 31",
                               settings.period));
    }
    return Status::Ok();
  }

 protected:
  bool needs_prepare() const override { return true; }

  uint32_t period_log2(const device::ServiceSettings& settings) const override {
    return static_cast<uint32_t>(settings.period);
  }

  std::vector<device::ServiceSample> samples(const Probe& probe,
                                             const std::string& function) const override {
    std::vector<device::ServiceSample> out;
    for (const auto& site : probe.sites()) {
      if (site.samples == 0) continue;
      auto s = at_site(site, function);
      s.name = Probe::stall_reason(site.op);
      s.value = static_cast<double>(site.samples);
      out.push_back(std::move(s));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<HostPassService> make_host_pc_sampling() {
  return std::make_unique<HostPcSampling>();
}

}  // namespace kreplay::hostrt
