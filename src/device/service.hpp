// PassService: one per-pass service of a device (PC sampling, SASS metrics, PM sampling), behind
// one interface the SDK drives the same way for every service: configure once, prepare as each
// window opens, then per pass begin (before the submission), end (after it completed) and flush
// (its samples).
//
// A device offers a service through Device::service(kind); nullptr means the device has none
// (the SDK then refuses to configure it with NOT_AVAILABLE). A new service is a new
// implementation of this interface and a new kreplay_pass_service_kind_t value; no other service
// changes. Counters keep device::CounterBackend: their configs, multi-pass sets and range
// sessions have no equivalent here.
//
// Threading: as for Launch, begin_pass/end_pass/flush for one launch are called by the thread that
// intercepted it, one pass at a time; configure and metrics may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.hpp"
#include "device/device.hpp"
#include "kreplay/services.h"

namespace kreplay::device {

/// The service's name: "pc_sampling", "sass_metrics", "pm_sampling"; nullptr for a kind that is
/// none of them. kreplay_get_pass_service_name answers with it, and the host device's test switch
/// KREPLAY_HOST_FAIL_SERVICE_PASSES names services by it.
constexpr const char* pass_service_name(kreplay_pass_service_kind_t kind) {
  switch (kind) {
    case KREPLAY_PASS_SERVICE_PC_SAMPLING:
      return "pc_sampling";
    case KREPLAY_PASS_SERVICE_SASS_METRICS:
      return "sass_metrics";
    case KREPLAY_PASS_SERVICE_PM_SAMPLING:
      return "pm_sampling";
    default:
      return nullptr;
  }
}

/// What a tool asked a service for, in a service-neutral form.
struct ServiceSettings {
  std::vector<std::string> metrics;  ///< SASS / PM metrics (empty: the service's default set)
  uint64_t period = 0;               ///< PC sampling: log2 of cycles; PM sampling: ns; 0: default
};

/// One metric (or stall reason) a service can collect.
struct ServiceMetric {
  std::string name;
  std::string description;
  bool in_default_set = false;
};

/// One value a service collected on one pass.
struct ServiceSample {
  std::string function;  ///< mangled name of the function holding the instruction
  uint64_t pc_offset = 0;
  std::string instruction;  ///< "" when the service has no instruction (PM sampling)
  std::string source_file;
  uint32_t source_line = 0;
  std::string name;      ///< stall reason or metric
  uint64_t time_ns = 0;  ///< PM sampling: end of the interval, from the pass's start
  double value = 0.0;
};

class PassService {
 public:
  virtual ~PassService() = default;
  virtual kreplay_pass_service_kind_t kind() const = 0;
  /// Metrics (SASS, PM) or stall reasons (PC sampling) the service can collect.
  virtual std::vector<ServiceMetric> metrics() const = 0;
  /// Check @p settings and fill in the defaults. Errors: COUNTER_NOT_FOUND (the message names
  /// the metric and close names), INVALID_ARGUMENT (a setting out of range, saying the range).
  virtual Status configure(ServiceSettings& settings) const = 0;
  /// Before @p launch's first submission, and before a window opens on it (a launch's passes,
  /// or a range's, @p launch being its first launch) ahead of the counters' warm start: for
  /// every launch, replayed or not. Called for every service some active context has configured,
  /// with the first such context's settings. For a service that must be set up on the launch's
  /// context before anything else collects there (CUDA PC sampling, whose kernels must run with
  /// it enabled from the start); it must be cheap when already done. Default: nothing.
  virtual void prepare(Launch& launch, const ServiceSettings& settings) {
    (void)launch;
    (void)settings;
  }
  /// Arm collection for the next submission of @p launch.
  virtual Status begin_pass(Launch& launch, const ServiceSettings& settings) = 0;
  /// The submission completed (or did not run): stop collecting.
  virtual Status end_pass(Launch& launch) = 0;
  /// What the pass collected (empty when it did not run).
  virtual Result<std::vector<ServiceSample>> flush(Launch& launch) = 0;
};

}  // namespace kreplay::device
