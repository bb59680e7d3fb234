// RangeProfiler: CUPTI's range profiler (cupti_range_profiler.h) on one CUDA context, in user
// replay: kreplay restores memory and relaunches the work itself, once per pass.
//
// Call sequence (verified on an H200 with CUPTI 13.0, reference/notes-h200-measurements.md §2b):
//
//   create(ctx)            cuptiProfilerInitialize (once per process), cuptiDeviceGetChipName,
//                          cuptiProfilerGetCounterAvailability, cuptiRangeProfilerEnable
//   configure(metrics)     one config image for the whole set (ProfilerHost, cached per device and
//                          metric list), counter-data size for the set and max_ranges
//   per dispatch / window:
//     begin()              CounterDataImageInitialize (a fresh image: CUPTI collapses ranges with a
//                          repeated name into one otherwise) + SetConfig(range mode, UserReplay,
//                          maxRangesPerPass, 1 nesting level, passIndex 0)
//     per pass:            [restore memory] start() [push_range()] launch(es) [pop_range()] stop()
//                          until stop() says all_passes_submitted (pass_count() passes)
//     decode()             DecodeData -> ranges dropped
//     values()             every range: name + values (ProfilerHost::evaluate)
//   ~RangeProfiler         cuptiRangeProfilerDisable
//
// One config per object: a second config image on an enabled range-profiler object is accepted
// by CUPTI and silently decodes to NaN, and a SetConfig in the other range mode (auto after user)
// crashes at the next Start. configure() with a different metric set or range mode after begin()
// has used the first therefore disables and re-enables the object (~170 ms on the H200); give a
// run one metric set and let CUPTI schedule the passes.
//
// Costs: every CUPTI call is timed (steady_clock) into costs(), per call kind: count, total, last
// and max, for the per-part cost breakdown.
//
// Threading: an object belongs to one context and is driven by one thread at a time (the replay
// loop); it is not internally synchronized. create() and device_supported() are thread-safe.
// Destroy the object before its context.
#pragma once

#include <chrono>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/cupti/profiler_host.hpp"
#include "common/status.hpp"

struct CUpti_RangeProfiler_Object;

namespace kreplay::cupti {

/// How ranges are formed.
enum class RangeMode {
  kAuto,  ///< every kernel launch between start() and stop() is a range, named "0", "1", ...
          ///< by launch order; CUPTI synchronizes the context after each kernel
  kUser,  ///< push_range()/pop_range() delimit ranges; kernels inside run asynchronously
};

/// What stop() reports.
struct PassResult {
  bool all_passes_submitted = false;  ///< the set is complete: decode() may follow
  size_t next_pass_index = 0;         ///< index of the next pass (0 once all were submitted)
};

/// One decoded range.
struct RangeValues {
  std::string name;            ///< range name (auto range: launch number; user: the pushed name)
  std::vector<double> values;  ///< one per metric, in the configured order
};

/// Wall-clock cost of one kind of call.
struct CallCost {
  uint64_t calls = 0;
  uint64_t total_ns = 0;
  uint64_t last_ns = 0;
  uint64_t max_ns = 0;

  void add(uint64_t ns) {
    ++calls;
    total_ns += ns;
    last_ns = ns;
    if (ns > max_ns) max_ns = ns;
  }
  double total_ms() const { return static_cast<double>(total_ns) / 1e6; }
  double mean_ms() const { return calls ? total_ms() / static_cast<double>(calls) : 0.0; }
};

/// Times one call into a CallCost (the scope's lifetime).
class TimedCall {
 public:
  explicit TimedCall(CallCost& cost) : cost_(cost), t0_(std::chrono::steady_clock::now()) {}
  ~TimedCall() {
    auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_)
            .count();
    cost_.add(static_cast<uint64_t>(ns));
  }
  TimedCall(const TimedCall&) = delete;
  TimedCall& operator=(const TimedCall&) = delete;

 private:
  CallCost& cost_;
  std::chrono::steady_clock::time_point t0_;
};

/// What a profiler object of a context needs from its device: the device, its chip name and the
/// device's ProfilerHost, made once per device from the counter availability read through @p ctx
/// (@p availability_cost times that read). Shared by RangeProfiler and ProfilerApiSession.
struct ContextDevice {
  CUdevice device = 0;
  std::string chip;
  std::shared_ptr<ProfilerHost> host;
};
Result<ContextDevice> context_device_host(CUcontext ctx, CallCost& availability_cost);

/// Per-part cost breakdown of a RangeProfiler.
struct RangeProfilerCosts {
  CallCost enable;                ///< cuptiRangeProfilerEnable (also after a metric-set switch)
  CallCost disable;               ///< cuptiRangeProfilerDisable
  CallCost counter_availability;  ///< cuptiProfilerGetCounterAvailability (both calls)
  CallCost host_config;           ///< ProfilerHost::build_config (cached after the first)
  CallCost counter_data_size;     ///< cuptiRangeProfilerGetCounterDataSize
  CallCost counter_data_init;     ///< cuptiRangeProfilerCounterDataImageInitialize
  CallCost set_config;            ///< cuptiRangeProfilerSetConfig
  CallCost start;                 ///< cuptiRangeProfilerStart
  CallCost stop;                  ///< cuptiRangeProfilerStop
  CallCost push_range;            ///< cuptiRangeProfilerPushRange
  CallCost pop_range;             ///< cuptiRangeProfilerPopRange
  CallCost decode;                ///< cuptiRangeProfilerDecodeData
  CallCost evaluate;              ///< one range's names + values (GetRangeName + Evaluate)
  uint64_t reenables = 0;         ///< Disable+Enable forced by a metric-set switch
  uint64_t ranges_dropped = 0;    ///< sum of DecodeData's numOfRangeDropped
};

class RangeProfiler {
 public:
  /// OK when CUPTI can profile @p device with the range profiler; otherwise NOT_AVAILABLE (or the
  /// CUPTI error) with the reason: architecture, SLI, vGPU (unsupported or profiling disabled),
  /// confidential compute, CMP, WSL. Permission problems (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) and
  /// another profiler holding CUPTI (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) only show up
  /// in create(), whose errors carry the same kind of explanation.
  static Status device_supported(CUdevice device);

  /// Enable the range profiler on @p ctx. The chip's ProfilerHost (with this device's counter
  /// availability) is shared by every RangeProfiler of the device, so config images are built
  /// once per (device, metric set).
  static Result<std::unique_ptr<RangeProfiler>> create(CUcontext ctx);

  ~RangeProfiler();
  RangeProfiler(const RangeProfiler&) = delete;
  RangeProfiler& operator=(const RangeProfiler&) = delete;

  CUcontext context() const { return ctx_; }
  CUdevice device() const { return device_; }
  const std::string& chip() const { return chip_; }
  /// The host side for this device (listing, pass counts, evaluation).
  ProfilerHost& host() { return *host_; }

  /// Select the metric set (see the class comment on switching sets), the range mode and how many
  /// ranges one pass may hold (sizes the counter-data image: ~3.4 MB for 16 metrics x 4 ranges,
  /// ~55 MB for 16 x 64 on GH100). Errors: COUNTER_NOT_FOUND for a bad name (with suggestions),
  /// INVALID_ARGUMENT for max_ranges 0.
  Status configure(const std::vector<std::string>& metrics, RangeMode mode = RangeMode::kAuto,
                   size_t max_ranges = 64);

  const std::vector<std::string>& metrics() const { return config_.metrics; }
  /// Passes CUPTI scheduled for the metric set (0 before configure()).
  size_t pass_count() const { return config_.pass_count; }
  RangeMode mode() const { return mode_; }
  size_t max_ranges() const { return max_ranges_; }
  size_t counter_data_size() const { return counter_data_.size(); }

  /// Start a collection (one dispatch, or one window of launches): a fresh counter-data image and
  /// SetConfig with passIndex 0. Call once before the first start() of each collection.
  Status begin();
  /// cuptiRangeProfilerStart: the pass begins; launches from here on are profiled.
  Status start();
  /// cuptiRangeProfilerStop: the pass ends.
  Result<PassResult> stop();
  /// User range mode: open a range named @p name (unique per collection, see begin()).
  Status push_range(const std::string& name);
  /// Close the innermost range.
  Status pop_range();
  /// After the last pass: decode the hardware data into the counter-data image. Returns the number
  /// of ranges dropped (more ranges than max_ranges in a pass).
  Result<size_t> decode();
  /// Every decoded range with its metric values (order of metrics()).
  Result<std::vector<RangeValues>> values();

  /// Passes stopped since begin().
  size_t passes_done() const { return passes_done_; }
  /// The counter-data image (valid after decode()).
  std::span<const uint8_t> counter_data() const { return counter_data_; }
  /// The counter-availability image read from the context.
  std::span<const uint8_t> counter_availability() const;

  const RangeProfilerCosts& costs() const { return costs_; }
  void reset_costs() { costs_ = {}; }
  /// Put the per-collection call costs (counter_data_init, set_config, start, stop, push_range,
  /// pop_range, decode, evaluate) back to @p before, keeping the set-up ones: a throw-away
  /// collection since then (the counters' warm start) is reported apart from the dispatches'.
  void restore_collection_costs(const RangeProfilerCosts& before) {
    costs_.counter_data_init = before.counter_data_init;
    costs_.set_config = before.set_config;
    costs_.start = before.start;
    costs_.stop = before.stop;
    costs_.push_range = before.push_range;
    costs_.pop_range = before.pop_range;
    costs_.decode = before.decode;
    costs_.evaluate = before.evaluate;
  }

 private:
  RangeProfiler(CUcontext ctx, CUdevice device, std::string chip,
                std::shared_ptr<ProfilerHost> host);
  Status enable();
  Status disable();
  /// A new CUPTI object in place of the current one (costs_.reenables), its counter-data image
  /// dropped: configure() or size_counter_data() makes the new one.
  Status reenable();
  /// counter_data_ sized for @p metrics and @p max_ranges on the current object.
  Status size_counter_data(const std::vector<std::string>& metrics, size_t max_ranges);

  CUcontext ctx_;
  CUdevice device_;
  std::string chip_;
  std::shared_ptr<ProfilerHost> host_;
  CUpti_RangeProfiler_Object* object_ = nullptr;

  ConfigImage config_;
  RangeMode mode_ = RangeMode::kAuto;
  size_t max_ranges_ = 0;
  std::vector<uint8_t> counter_data_;
  bool config_used_ = false;  // SetConfig ran with config_ on object_
  bool in_pass_ = false;
  bool all_submitted_ = false;
  bool decoded_ = false;
  size_t passes_done_ = 0;
  RangeProfilerCosts costs_;
};

}  // namespace kreplay::cupti
