// ProfilerApiSession: CUPTI's legacy profiler API (cupti_profiler_target.h; deprecated in CUDA
// 13.0, still shipped) on one CUDA context, in user replay: kreplay restores memory and relaunches
// the work itself, once per pass. The alternative to RangeProfiler (range_profiler.hpp) that keeps
// one session and one config and pays only BeginPass/EndPass per pass; its interface mirrors
// RangeProfiler's so that the counter service can drive either.
//
// Call sequence (from the header and CUPTI's pre-13 userrange_profiling sample; run on the H200 by
// bench/cuda/profiler_api_cost.cu and, with KREPLAY_COUNTER_API=profiler, by counters_check.py):
//
//   create(ctx)            cuptiProfilerInitialize (once per process), cuptiDeviceGetChipName,
//                          cuptiProfilerGetCounterAvailability (before any session: it fails
//                          while one is active on the device)
//   configure(metrics,...) config image (ProfilerHost, host API; or NVPW's, see ConfigSource),
//                          counter-data prefix (LegacyMetrics, NVPW) and a counter-data image +
//                          scratch buffer for max_ranges ranges
//   per dispatch / window:
//     begin()              kPerDispatch: image initialized again, BeginSession, SetConfig
//                          kKept: the first time BeginSession + SetConfig; later nothing
//                          (KeptReset::kNone) or UnsetConfig + SetConfig (kSetConfig); when the
//                          image is full, EndSession and a new session on a fresh image
//     per pass:            [restore memory] start() [push_range()] launch(es) [pop_range()] stop()
//                            start() = BeginPass + EnableProfiling,
//                            stop()  = DisableProfiling + EndPass (allPassesSubmitted)
//     decode()             FlushCounterData (kPerDispatch: then UnsetConfig + EndSession)
//     values()             the ranges this collection added: name + values
//   end_session()          kKept: Flush, UnsetConfig, EndSession (also done by the destructor)
//
// Counter data. The legacy image comes from cuptiProfilerCounterDataImageInitialize with NVPW's
// counter-data prefix; it is decoded through ProfilerHost (cuptiRangeProfilerGetCounterDataInfo,
// cuptiProfilerHostGetRangeName, cuptiProfilerHostEvaluateToGpuValues) when the host API accepts
// it, else through NVPW's metrics evaluator (EvalPath records which one was used).
//
// One session at a time per context, and not while a RangeProfiler is enabled on it.
// Threading: one context, one thread at a time, as RangeProfiler.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/cupti/legacy_host.hpp"
#include "backends/cuda/cupti/profiler_host.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"
#include "common/status.hpp"

namespace kreplay::cupti {

/// How long a session lives.
enum class SessionScope {
  kPerDispatch,  ///< BeginSession + SetConfig in begin(), UnsetConfig + EndSession in decode()
  kKept,         ///< one session and config across collections, one range (or more) each
};

/// kKept: what begin() does between two collections.
enum class KeptReset {
  kNone,       ///< nothing: the next BeginPass starts the next pass sequence
  kSetConfig,  ///< UnsetConfig + SetConfig(passIndex 0)
};

/// Which config image goes to cuptiProfilerSetConfig.
enum class ConfigSource {
  kHostApi,  ///< ProfilerHost::build_config (cuptiProfilerHostGetConfigImage), as RangeProfiler
  kNvpw,     ///< LegacyMetrics::config_image (NVPW_RawMetricsConfig), as CUPTI's old samples
};

/// Which decoder values() used.
enum class EvalPath {
  kAuto,     ///< host API, NVPW when the host API refuses the image
  kHostApi,  ///< cuptiProfilerHostEvaluateToGpuValues (ProfilerHost::evaluate)
  kNvpw,     ///< NVPW_MetricsEvaluator_EvaluateToGpuValues (LegacyMetrics::evaluate)
};

struct ProfilerApiOptions {
  RangeMode mode = RangeMode::kUser;
  size_t max_ranges = 64;  ///< ranges in the image; kKept: collections before a new session
  SessionScope scope = SessionScope::kPerDispatch;
  KeptReset kept_reset = KeptReset::kNone;
  ConfigSource config = ConfigSource::kHostApi;
  size_t max_ranges_per_pass = 0;  ///< BeginSession's maxRangesPerPass; 0: max_ranges
  /// BeginSession's maxLaunchesPerPass (must be >= maxRangesPerPass); 0: maxRangesPerPass. A
  /// graph launch in one user range holds many kernel launches.
  size_t max_launches_per_pass = 0;
};

/// Per-part cost breakdown of a ProfilerApiSession.
struct ProfilerApiCosts {
  CallCost counter_availability;  ///< cuptiProfilerGetCounterAvailability (both calls)
  CallCost host_config;           ///< ProfilerHost::build_config or LegacyMetrics::config_image
  CallCost prefix;                ///< LegacyMetrics::create (raw requests + counter-data prefix)
  CallCost counter_data_size;     ///< image + scratch sizing and first initialization
  CallCost counter_data_init;     ///< image + scratch initialized again (new session)
  CallCost begin_session;         ///< cuptiProfilerBeginSession
  CallCost end_session;           ///< cuptiProfilerEndSession
  CallCost set_config;            ///< cuptiProfilerSetConfig
  CallCost unset_config;          ///< cuptiProfilerUnsetConfig
  CallCost begin_pass;            ///< cuptiProfilerBeginPass
  CallCost end_pass;              ///< cuptiProfilerEndPass
  CallCost enable;                ///< cuptiProfilerEnableProfiling
  CallCost disable;               ///< cuptiProfilerDisableProfiling
  CallCost push_range;            ///< cuptiProfilerPushRange
  CallCost pop_range;             ///< cuptiProfilerPopRange
  CallCost flush;                 ///< cuptiProfilerFlushCounterData
  CallCost evaluate;              ///< one range's name + values
  uint64_t sessions = 0;          ///< BeginSession calls
  uint64_t rollovers = 0;         ///< kKept: sessions ended because the image was full
  uint64_t ranges_dropped = 0;    ///< FlushCounterData's numRangesDropped
  uint64_t trace_bytes_dropped = 0;
};

class ProfilerApiSession {
 public:
  /// RangeProfiler::device_supported: the same check (CUPTI_PROFILER_RANGE_PROFILING covers the
  /// cuptiProfiler* API too).
  static Status device_supported(CUdevice device);

  /// Initialize the profiler API for @p ctx; no session yet.
  static Result<std::unique_ptr<ProfilerApiSession>> create(CUcontext ctx);

  ~ProfilerApiSession();
  ProfilerApiSession(const ProfilerApiSession&) = delete;
  ProfilerApiSession& operator=(const ProfilerApiSession&) = delete;

  CUcontext context() const { return ctx_; }
  CUdevice device() const { return device_; }
  const std::string& chip() const { return chip_; }
  ProfilerHost& host() { return *host_; }

  /// Select the metric set and how sessions are used. Ends a session that is open.
  Status configure(const std::vector<std::string>& metrics, const ProfilerApiOptions& options);
  /// RangeProfiler::configure's signature: a session per dispatch.
  Status configure(const std::vector<std::string>& metrics, RangeMode mode = RangeMode::kUser,
                   size_t max_ranges = 64) {
    ProfilerApiOptions o;
    o.mode = mode;
    o.max_ranges = max_ranges;
    return configure(metrics, o);
  }

  const std::vector<std::string>& metrics() const { return metrics_; }
  size_t pass_count() const { return pass_count_; }
  RangeMode mode() const { return options_.mode; }
  size_t max_ranges() const { return options_.max_ranges; }
  const ProfilerApiOptions& options() const { return options_; }
  size_t counter_data_size() const { return data_.image.size(); }
  bool session_open() const { return session_open_; }

  /// Start a collection (see the file comment for what each scope does).
  Status begin();
  /// BeginPass + EnableProfiling.
  Status start();
  /// DisableProfiling + EndPass.
  Result<PassResult> stop();
  /// User range mode: open a range (unique per session: CUPTI keeps one range per range stack).
  Status push_range(const std::string& name);
  Status pop_range();
  /// After the last pass: FlushCounterData (kPerDispatch: and the session ends). Returns the
  /// ranges dropped.
  Result<size_t> decode();
  /// The ranges the last collection added, through @p path.
  Result<std::vector<RangeValues>> values(EvalPath path = EvalPath::kAuto);
  /// Values of range @p index of the image through @p path (kHostApi or kNvpw), for cross-checks;
  /// does not count as read.
  Result<std::vector<double>> evaluate_range(size_t index, EvalPath path);
  /// Ranges in the image (host API's count; user mode without it: the names pushed).
  Result<size_t> ranges_in_image() const { return range_count(); }
  /// kKept: UnsetConfig + SetConfig(passIndex 0) now (e.g. after a partial warm-up pass).
  Status restart_config();
  /// End the open session, if any (Flush first when passes were submitted).
  Status end_session();

  size_t passes_done() const { return passes_done_; }
  /// The decoder values() used last.
  EvalPath last_eval_path() const { return last_eval_; }
  std::span<const uint8_t> counter_data() const { return data_.image; }
  const ProfilerApiCosts& costs() const { return costs_; }
  void reset_costs() { costs_ = {}; }

 private:
  ProfilerApiSession(CUcontext ctx, CUdevice device, std::string chip,
                     std::shared_ptr<ProfilerHost> host);
  Status begin_session();
  Status set_config();
  Status unset_config();
  Status flush();
  Result<size_t> range_count() const;

  CUcontext ctx_;
  CUdevice device_;
  std::string chip_;
  std::shared_ptr<ProfilerHost> host_;

  std::vector<std::string> metrics_;
  ProfilerApiOptions options_;
  std::vector<uint8_t> config_;
  size_t pass_count_ = 0;
  std::unique_ptr<LegacyMetrics> legacy_;
  LegacyCounterData data_;

  bool session_open_ = false;
  bool config_set_ = false;
  bool in_pass_ = false;
  bool all_submitted_ = false;
  bool decoded_ = false;
  bool unflushed_ = false;            // passes submitted since the last flush
  bool image_fresh_ = false;          // the image was initialized and no session used it yet
  int host_api_reads_ = -1;           // -1 unknown, 0 no, 1 yes: does the host API decode it
  size_t passes_done_ = 0;
  size_t returned_ = 0;               // ranges of this session's image values() returned
  size_t collections_in_session_ = 0;
  std::vector<std::string> names_;    // user mode: names pushed in pass 0, this session, in order
  EvalPath last_eval_ = EvalPath::kAuto;
  ProfilerApiCosts costs_;
};

}  // namespace kreplay::cupti
