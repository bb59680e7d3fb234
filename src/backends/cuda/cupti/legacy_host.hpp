// LegacyMetrics: the host-side pieces that CUPTI's legacy profiler API (cupti_profiler_target.h,
// deprecated in CUDA 13.0) needs and that CUPTI 13's profiler host API (cupti_profiler_host.h)
// does not give.
//
// The legacy counter-data image is built from a *counter-data prefix*
// (CUpti_Profiler_CounterDataImageOptions::pCounterDataPrefix, "generated from
// NVPW_CounterDataBuilder_GetCounterDataPrefix()"), which only the NVPW host library
// (nvperf_host.h, libnvperf_host) makes: the metric names become raw-counter requests through an
// NVPW metrics evaluator (ConvertMetricNameToMetricEvalRequest, GetMetricRawDependencies) and a
// CUDA counter-data builder turns those into the prefix. The range profiler sizes its image
// itself from the metric names (cuptiRangeProfilerGetCounterDataSize) and has no prefix.
//
// Also here, for cross-checks and as fallbacks:
//   config_image()  a config image built by NVPW (RawMetricsConfig, NVPA_ACTIVITY_KIND_PROFILER),
//                   the way CUPTI's pre-13 samples built the image for cuptiProfilerSetConfig;
//                   ProfilerHost's image (host API) is what kreplay uses by default.
//   evaluate()      metric values of one range through the NVPW metrics evaluator
//                   (SetDeviceAttributes + EvaluateToGpuValues), for an image that the host API's
//                   cuptiProfilerHostEvaluateToGpuValues refuses.
//
// Everything here runs without a GPU (chip name + optional counter-availability image).
// Thread-safety: calls into NVPW are serialized with host_api_mutex(); one object is used by one
// thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.hpp"

struct NVPW_MetricsEvaluator;

namespace kreplay::cupti {

/// A legacy counter-data image and its scratch buffer (both sized and initialized by CUPTI).
struct LegacyCounterData {
  std::vector<uint8_t> image;
  std::vector<uint8_t> scratch;
  uint32_t max_ranges = 0;
};

class LegacyMetrics {
 public:
  /// Raw requests and the counter-data prefix for @p metrics on @p chip (@p counter_availability is
  /// kept for config_image()). Errors name the NVPW call
  /// and the metric (NVPW answers a bad name with NVPA_STATUS_INVALID_ARGUMENT).
  static Result<std::unique_ptr<LegacyMetrics>> create(
      const std::string& chip, const std::vector<std::string>& metrics,
      std::span<const uint8_t> counter_availability = {});

  ~LegacyMetrics();
  LegacyMetrics(const LegacyMetrics&) = delete;
  LegacyMetrics& operator=(const LegacyMetrics&) = delete;

  const std::string& chip() const { return chip_; }
  const std::vector<std::string>& metrics() const { return metrics_; }
  /// Raw counters the metrics depend on (what the prefix and an NVPW config hold).
  const std::vector<std::string>& raw_counters() const { return raw_names_; }
  /// The counter-data prefix (NVPW_CounterDataBuilder_GetCounterDataPrefix).
  const std::vector<uint8_t>& prefix() const { return prefix_; }

  /// A config image built by NVPW for the same metrics, and its pass count
  /// (NVPW_RawMetricsConfig_GetNumPasses_V2).
  struct NvpwConfig {
    std::vector<uint8_t> image;
    size_t pass_count = 0;
  };
  Result<NvpwConfig> config_image();

  /// A counter-data image with room for @p max_ranges ranges (cuptiProfilerCounterDataImage
  /// CalculateSize + Initialize, then the scratch buffer: CalculateScratchBufferSize +
  /// InitializeScratchBuffer). Range names up to @p max_name_length bytes with the NUL.
  Result<LegacyCounterData> make_counter_data(uint32_t max_ranges,
                                              uint32_t max_name_length = 64) const;
  /// Initialize @p data again in place (same size): an empty image for a new session.
  Status reinitialize(LegacyCounterData& data, uint32_t max_name_length = 64) const;

  /// Values of metrics() for range @p range_index of a filled image, through the NVPW evaluator.
  Result<std::vector<double>> evaluate(std::span<const uint8_t> counter_data_image,
                                       size_t range_index);

 private:
  LegacyMetrics() = default;
  Status init_image(LegacyCounterData& data, uint32_t max_ranges, uint32_t max_name_length,
                    bool allocate) const;

  std::string chip_;
  std::vector<std::string> metrics_;
  std::vector<uint8_t> availability_;
  std::vector<uint8_t> evaluator_scratch_;
  NVPW_MetricsEvaluator* evaluator_ = nullptr;
  std::vector<std::string> raw_names_;
  std::vector<uint8_t> requests_;  // NVPW_MetricEvalRequest[metrics_.size()], opaque here
  std::vector<uint8_t> prefix_;
};

/// "NVPA_STATUS_INVALID_ARGUMENT" etc. for an NVPA_Status value.
const char* nvpa_status_name(int status);

}  // namespace kreplay::cupti
