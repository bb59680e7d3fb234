// The host device's per-pass services share one way of collecting: begin_pass arms a Probe on
// the launch, its next submission runs with it (probe.hpp), flush turns what the probe saw into
// samples. Each service (pc_sampling.cpp, sass_metrics.cpp, pm_sampling.cpp) says only what it
// collects and how it checks its settings; host_services() lists them.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "backends/host/services/probe.hpp"
#include "device/service.hpp"

namespace kreplay::hostrt {

class HostPassService : public device::PassService {
 public:
  void prepare(device::Launch& launch, const device::ServiceSettings& settings) final;
  Status begin_pass(device::Launch& launch, const device::ServiceSettings& settings) final;
  Status end_pass(device::Launch& launch) final;
  Result<std::vector<device::ServiceSample>> flush(device::Launch& launch) final;

 protected:
  /// Whether the service samples only on a device where prepare() ran before the pass (PC
  /// sampling, as CUDA's: kernels must run with it enabled from the first window on, or a pass
  /// gets nothing with every call succeeding). Unprepared, such a pass gives no sample.
  virtual bool needs_prepare() const { return false; }
  /// The probe's clock settings for @p settings: PC sampling period (log2 cycles; >= 63: none)
  /// and PM interval.
  virtual uint32_t period_log2(const device::ServiceSettings& settings) const {
    (void)settings;
    return 63;
  }
  virtual uint64_t pm_interval(const device::ServiceSettings& settings) const {
    (void)settings;
    return UINT64_MAX;
  }
  /// What one completed submission's probe gives, for the function @p function.
  virtual std::vector<device::ServiceSample> samples(const Probe& probe,
                                                     const std::string& function) const = 0;
  /// Check metric names against metrics(): COUNTER_NOT_FOUND naming the first unknown one.
  Status check_metrics(const std::vector<std::string>& names, const char* service) const;
  /// A sample of @p site with everything but the name and value.
  static device::ServiceSample at_site(const ProbeSite& site, const std::string& function);

 private:
  std::atomic<bool> prepared_{false};
};

std::unique_ptr<HostPassService> make_host_pc_sampling();
std::unique_ptr<HostPassService> make_host_sass_metrics();
std::unique_ptr<HostPassService> make_host_pm_sampling();

/// Every per-pass service the host device has (one line per service).
inline std::vector<std::unique_ptr<HostPassService>> host_services() {
  std::vector<std::unique_ptr<HostPassService>> out;
  out.push_back(make_host_pc_sampling());
  out.push_back(make_host_sass_metrics());
  out.push_back(make_host_pm_sampling());
  return out;
}

}  // namespace kreplay::hostrt
