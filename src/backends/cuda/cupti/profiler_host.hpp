// ProfilerHost: CUPTI's profiler host API (cupti_profiler_host.h) for one chip.
//
// Everything here runs without a GPU: given a chip name ("GH100" for H100 and H200) CUPTI lists
// the metrics, builds config images and says how many passes a metric set needs. On a device the
// range profiler passes the counter-availability image it read from the context, which hides the
// counters that context cannot collect (MIG, vGPU, ...).
//
// Metric names. CUPTI lists *base* metrics in three kinds:
//   counter     dram__bytes_read             full names: base + one of 44 suffixes, a rollup
//                                            (.sum .avg .min .max) optionally followed by a
//                                            submetric (.per_second,
//                                            .pct_of_peak_sustained_elapsed, .peak_sustained, ...):
//                                            dram__bytes_read.sum
//   ratio       l1tex__t_sector_hit_rate     .pct, .ratio or .max_rate
//   throughput  sm__throughput               a rollup then .pct_of_peak_sustained_active|_elapsed
// A base name has no rollup, so it cannot be collected as is. Some base names carry a PM-unit
// prefix with dots ("SM_A.TriageCompute.sm__throughput", "CTC.TriageCompute.ctc__rx_bytes"): the
// variants ncu's triage sections use; CUPTI accepts them like any other name. CUPTI answers an
// unknown name, or a bad suffix, with a bare CUPTI_ERROR_INVALID_PARAMETER, so kreplay checks every
// name against the catalog itself first and explains what is wrong.
//
// What `--list-avail` shows: one MetricInfo per base metric (3650 on GH100), with its kind,
// unit, hardware unit, description and the suffixes that make it a full name. Listing every full
// name (about 150,000 on GH100) would bury the information; list_metric_names_full() exists for
// completion and tests.
//
// Config images. ConfigAddMetrics *adds* to a host object (a second call yields the union), so
// every metric set gets a fresh CUPTI host object. That object is kept with the image: CUPTI's
// own samples evaluate counter data with the host object that built the config, and so does
// evaluate(). Images are cached per metric list (exact order), so a set is built once per
// ProfilerHost; CUPTI builds identical bytes for identical input, which makes images cacheable
// across runs too.
//
// Thread-safety: every method may be called from any thread. Each ProfilerHost serializes its own
// state with a mutex, and every call into CUPTI's host API goes through one process-wide lock
// (cupti_common.hpp: host_api_mutex), because CUPTI does not document those calls as thread-safe.
//
// Costs measured offline (GH100, CUPTI 13.0): the first host-API call in a process takes 70-125 ms
// and ~110 MB of resident memory (libcupti loads libnvperf_host and its chip tables); after that a
// host object takes ~1 ms and ~1 MB, the catalog 12 ms, list_metrics() ~35 ms, a 1-pass config
// ~3 ms and the 10-pass kTenPassMetrics config 23-40 ms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.hpp"
#include "kreplay/fwd.h"

struct CUpti_Profiler_Host_Object;

namespace kreplay::cupti {

/// One base metric, as `--list-avail` shows it.
struct MetricInfo {
  std::string name;         ///< base name as CUPTI lists it: "dram__bytes_read"
  std::string description;  ///< "# of bytes read from DRAM"; for a prefixed variant with no text
                            ///< of its own, the description of the unprefixed metric
  std::string unit;         ///< dimension: "byte", "nanosecond", "percent", "" for plain ratios
  kreplay_counter_value_type_t type =
      KREPLAY_COUNTER_VALUE_TYPE_NONE;  ///< counter/ratio/throughput
  std::string hw_unit;                  ///< hardware unit: "dram", "sm", "smsp", "lts", ...
  std::vector<std::string> suffixes;    ///< what makes a full name: ".sum", ".avg.per_second", ...
};

/// A full metric name split against the catalog.
struct ResolvedMetric {
  std::string base;                                                     ///< "dram__bytes_read"
  std::string suffix;                                                   ///< ".sum"
  kreplay_counter_value_type_t type = KREPLAY_COUNTER_VALUE_TYPE_NONE;  ///< kind of the base
};

/// A CUPTI config image for one metric set on one chip.
struct ConfigImage {
  std::string chip;                  ///< chip it was built for
  std::vector<std::string> metrics;  ///< the metric set, in the order given
  std::vector<uint8_t> image;        ///< bytes for cuptiRangeProfilerSetConfig
  size_t pass_count = 0;             ///< cuptiProfilerHostGetNumOfPasses
};

class ProfilerHost {
 public:
  /// Chips CUPTI's host API supports (30 with CUPTI 13.0: GV100 ... GH100 ... GB20B).
  static Result<std::vector<std::string>> supported_chips();

  /// A host for @p chip. With an empty @p counter_availability_image it is offline: every metric
  /// of the chip is listed. The image is copied. Unknown chip: NOT_AVAILABLE naming close chips.
  static Result<std::unique_ptr<ProfilerHost>> create(
      const std::string& chip, std::span<const uint8_t> counter_availability_image = {});

  /// The process-wide offline host for @p chip, created on first use and kept (one per chip).
  /// The chip name CUPTI reports for CUDA device @p ordinal (needs a driver and cuInit done).
  static Result<std::string> device_chip_name(int ordinal);

  static Result<std::shared_ptr<ProfilerHost>> shared(const std::string& chip);

  ~ProfilerHost();
  ProfilerHost(const ProfilerHost&) = delete;
  ProfilerHost& operator=(const ProfilerHost&) = delete;

  const std::string& chip() const { return chip_; }
  /// True when created without a counter-availability image.
  bool offline() const { return availability_.empty(); }
  /// The counter-availability image it was created with (empty offline).
  std::span<const uint8_t> counter_availability() const { return availability_; }
  /// Milliseconds cuptiProfilerHostInitialize took for this object's first host object.
  double init_ms() const { return init_ms_; }

  /// Every base metric, sorted by name with unprefixed names first (see the file comment).
  Result<std::vector<MetricInfo>> list_metrics();

  /// Every valid full name (base + each of its suffixes), in list_metrics() order.
  Result<std::vector<std::string>> list_metric_names_full();

  /// Split and check one full name ("base.rollup[.submetric]"). COUNTER_NOT_FOUND for an unknown
  /// base (message names it and suggests up to 3 close valid names) or for a base with a suffix
  /// it does not take (message lists the valid suffixes).
  Result<ResolvedMetric> resolve(std::string_view full_name);

  /// resolve() for each name; one error naming every bad name.
  Status validate(const std::vector<std::string>& metric_names);

  /// One config image for the whole metric set, never one per group: two config images on one
  /// range-profiler object decode to NaN. Cached per metric list. Errors: INVALID_ARGUMENT for an
  /// empty list, COUNTER_NOT_FOUND as resolve().
  Result<ConfigImage> build_config(const std::vector<std::string>& metric_names);

  /// build_config(...).pass_count.
  Result<size_t> pass_count(const std::vector<std::string>& metric_names);

  /// Values of @p metric_names for range @p range_index of a decoded counter-data image
  /// (cuptiProfilerHostEvaluateToGpuValues), in the order given. Uses the host object that built
  /// the config of exactly this metric list when there is one, else this chip's base object.
  Result<std::vector<double>> evaluate(std::span<const uint8_t> counter_data_image,
                                       size_t range_index,
                                       const std::vector<std::string>& metric_names);

  /// Number of ranges in a decoded counter-data image (cuptiRangeProfilerGetCounterDataInfo).
  static Result<size_t> range_count(std::span<const uint8_t> counter_data_image);
  /// Name of one range (cuptiProfilerHostGetRangeName); nested names joined by @p delimiter.
  static Result<std::string> range_name(std::span<const uint8_t> counter_data_image,
                                        size_t range_index, const char* delimiter = "/");
  /// Every range's name, by index.
  static Result<std::vector<std::string>> range_names(std::span<const uint8_t> counter_data_image);

  /// Counters for tests and cost reports.
  struct Stats {
    size_t configs_built = 0;      ///< config images built through CUPTI
    size_t config_cache_hits = 0;  ///< build_config calls answered from the cache
    size_t host_objects = 0;       ///< CUPTI host objects alive (base + one per metric set)
  };
  Stats stats() const;

 private:
  struct SuffixSet;  // suffixes shared by every base metric of a kind
  struct CatalogEntry {
    kreplay_counter_value_type_t type;
    const SuffixSet* suffixes;
  };
  struct CachedConfig {
    ConfigImage config;
    CUpti_Profiler_Host_Object* host = nullptr;  // the object that built it; kept for evaluate
  };

  ProfilerHost(std::string chip, std::vector<uint8_t> availability);

  Result<CUpti_Profiler_Host_Object*> new_host_object(double* elapsed_ms);
  Status ensure_catalog_locked();
  Result<ResolvedMetric> resolve_locked(std::string_view full_name);
  Status validate_locked(const std::vector<std::string>& metric_names);
  Result<const CachedConfig*> config_locked(const std::vector<std::string>& metric_names);
  std::string unknown_metric_message(std::string_view full_name);

  const std::string chip_;
  const std::vector<uint8_t> availability_;
  double init_ms_ = 0;

  mutable std::mutex mu_;
  CUpti_Profiler_Host_Object* base_ = nullptr;  // listing, properties, fallback evaluation
  bool catalog_ready_ = false;
  std::vector<std::unique_ptr<SuffixSet>> suffix_sets_;
  std::unordered_map<std::string, CatalogEntry> catalog_;  // base name -> kind, suffixes
  std::vector<std::string> base_names_;                    // list order
  std::map<std::string, CachedConfig> configs_;            // key: names joined by '\n'
  Stats stats_;
};

}  // namespace kreplay::cupti
