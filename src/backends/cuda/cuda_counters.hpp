// Hardware counters on CUDA: device::CounterBackend over CUPTI's range profiler in user replay
// with auto ranges (one range per kernel launch). A graph launch is counted as one user range
// (push/pop around the launch): CUPTI's auto range cannot profile graph launches (on the H200
// with CUDA 13.0 every Stop after one failed with CUPTI_ERROR_UNKNOWN, or crashed inside
// NVPW_CUDA_Profiler_DecodeCounters; bench/cuda/graph_probe.cu).
//
// One counter set holds every metric a tool asks for; CUPTI says how many hardware passes it
// needs (CounterSet::pass_count) and schedules which counters each pass collects. The tool runs
// the same set on that many consecutive replay passes of a dispatch: the first pass begins a
// collection (fresh counter-data image, SetConfig at pass index 0), every pass is bracketed by
// Start/Stop, and after the pass on which CUPTI reports all passes submitted the data is decoded
// and evaluated. Values are therefore delivered once per dispatch, on that last pass: on CUDA the
// `replay_pass` of a counter record is the pass that completed the set, not the pass that read
// a particular counter.
//
// KREPLAY_COUNTER_API picks the CUPTI API behind the same service. Unset: the range profiler, as
// above, and where it cannot be enabled on a context although the device supports profiling (a
// driver older than the range profiler), the profiler API (`profiler`, below) for the rest of the
// process, said in one warning. `range` forces the range profiler (no fallback); otherwise the
// fallback, CUPTI's legacy profiler API (its per-pass calls cost what the
// range profiler's do on the H200: bench/RESULTS.md, sixth session)
// (cupti/profiler_api.hpp, bench/cuda/profiler_api_cost.cu): `profiler` (kernel replay keeps one
// session and config across dispatches, one user range per dispatch), `profiler-setconfig` (the
// same with UnsetConfig + SetConfig before each dispatch) or `profiler-per-dispatch` (a session
// per dispatch). Range replay under any `profiler*` value uses a session per collection. A
// per-pass service (services/) makes the counters give a session up as it does the range
// profiler (yield_profiler), but that path has not run with sessions either.
//
// Warm start (KREPLAY_WARM_START, default 1; cuda_warm_start.cpp): the first Start after the range
// profiler is enabled on a context costs far more than the later ones (186.8 ms against 16 ms on
// the H200, bench/cuda/profiler_api_cost.cu). Before the first replay window of a context that a
// tool counts on (before its snapshot, Hooks::warm_start), one whole throw-away collection of the
// counter config runs on a tiny kernel of kreplay's own (MemoryOps::tiny_launch): every pass with
// one launch, then decode and values, as profiler_api_cost's case range_warm_full. Once per
// (context, config); a failure is logged at debug level and the first dispatch pays as before.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "device/device.hpp"

namespace kreplay::cupti {
class RangeProfiler;
class ProfilerApiSession;
}

namespace kreplay::cuda {

class CudaDevice;
class CudaLaunch;

/// The chip name CUPTI uses for device @p ordinal ("GH100" for H100 and H200); "" if unknown.
std::string chip_name(int ordinal);

/// KREPLAY_COUNTER_API selects the range profiler (unset or `range`, the default).
bool range_profiler_counter_api();

/// What the warm starts of one device cost (KREPLAY_PRINT_COSTS prints it).
struct WarmStartCost {
  uint64_t runs = 0;       ///< warm-up collections that completed
  uint64_t failed = 0;     ///< warm-ups that failed (that context's first dispatch paid)
  uint64_t failed_ns = 0;  ///< what the failed ones took
  uint64_t total_ns = 0;   ///< whole warm-ups: tiny launches, every pass, decode, values
  uint64_t max_ns = 0;
  uint64_t first_start_ns = 0;  ///< their first cuptiRangeProfilerStart, summed
  uint64_t passes = 0;          ///< passes they ran, summed
  uint64_t nan_values = 0;      ///< NaN among their own (discarded) values
};

class CudaCounterSet final : public device::CounterSet {
 public:
  CudaCounterSet(std::vector<std::string> names, uint64_t passes)
      : names_(std::move(names)), passes_(passes) {}
  const std::vector<std::string>& names() const override { return names_; }
  uint64_t pass_count() const override { return passes_; }

 private:
  std::vector<std::string> names_;
  uint64_t passes_;
};

class CudaCounterBackend final : public device::CounterBackend {
 public:
  /// @p chip_guess names the chip from the compute capability; the CUPTI name replaces it when
  /// counters are first used.
  /// (Defined in the .cpp, where the profiler classes held by unique_ptr are complete.)
  CudaCounterBackend(CUdevice dev, int ordinal, std::string chip_guess);
  ~CudaCounterBackend() override;

  Result<std::vector<device::CounterDesc>> list() override;
  Result<std::shared_ptr<device::CounterSet>> create(const std::vector<std::string>& names) override;
  bool patches_code() const override { return patches_code_.load(std::memory_order_acquire); }
  Status begin_pass(device::Launch& launch, std::span<device::CounterSet* const> sets) override;
  Result<std::vector<std::vector<device::CounterValue>>> end_pass(device::Launch& launch) override;
  Status begin_range_pass(device::CounterSet* set, bool first_pass, bool whole_graph,
                          bool flushes) override;
  /// The flush (MemoryOps::flush_caches) is a kernel: inside an auto-range session on the context
  /// it ran in, a range of its own, left out of end_range_pass's values by its position.
  void range_flush(size_t launches) override;
  Result<std::vector<std::vector<device::CounterValue>>> end_range_pass(size_t launches) override;
  /// KREPLAY_WARM_START (cuda_warm_start.cpp): on the calling thread's context, once per
  /// (context, config), a whole throw-away collection of the last counter config created, in the
  /// range mode and image size @p launch's first pass will use; only while no profiler object
  /// exists on the context yet (its first Start not yet paid).
  void warm_start(device::Launch& launch, bool range) override;
  /// The device whose drain and tiny kernel (CudaDevice::tiny_launch) the warm start uses; set by
  /// the interceptor. Without it there is no warm start.
  void set_device(CudaDevice* device) { device_ = device; }
  WarmStartCost warm_start_cost();

  /// Ranges per pass the counter-data image is sized for (the engine's launch limit).
  void set_max_range_launches(size_t n) { max_range_launches_ = n; }
  /// Ranges a range pass's counter-data image holds: one per launch, and with @p flushes (cache
  /// control between the launches) as many again for the flushes' own ranges.
  size_t range_capacity(bool flushes) const {
    return flushes ? 2 * max_range_launches_ : max_range_launches_;
  }

  /// The profiler of the calling thread's context, or nullptr.
  cupti::RangeProfiler* profiler();
  /// The chip name CUPTI reports for the device (the guess until CUPTI answered); the per-pass
  /// services (services/) ask it too.
  const std::string& chip();
  /// Give the calling context's range profiler up so that another CUPTI profiling API (a
  /// per-pass service, services/) can start there: CUPTI's profiling API sets cannot be mixed and
  /// the profiler stays enabled between counter passes. The next counter pass enables a fresh one
  /// (~170 ms). False when there is none, or when @p launch (or the open range) is midway
  /// through a counter collection (its next counter pass needs this object).
  bool yield_profiler(CudaLaunch& launch);
  /// Whether a range profiler (or profiler-API session) of the counters is on the calling
  /// thread's context now.
  bool holds_profiler_here();
  /// Whether the counters have used CUPTI's range profiler (or profiler API) in this process,
  /// given up since or not.
  bool used() const { return used_.load(); }
  /// Every profiler created so far (for cost reports at exit; creates none).
  std::vector<cupti::RangeProfiler*> existing_profilers();
  /// Every profiler-API session object created so far (KREPLAY_COUNTER_API=profiler*; for cost
  /// reports at exit).
  std::vector<cupti::ProfilerApiSession*> existing_sessions();

 private:
  Result<cupti::RangeProfiler*> profiler_for_current_context();
  /// Before a collection pass (or the warm start) on the current context: the device's services
  /// get it ready (CudaDevice::ready_for_profiling).
  void ready_current_context();
  /// Whether counting goes through CUPTI's profiler API: KREPLAY_COUNTER_API=profiler*, or, with
  /// it unset, once the range profiler could not be enabled on a context (the current one
  /// included; the fallback then holds for the process, said once).
  bool use_profiler_api();
  /// Start counting @p launch's pass with @p set on @p rp (begin_pass without the retry).
  Status start_launch_pass(cupti::RangeProfiler* rp, CudaLaunch& launch, CudaCounterSet* set);
  Status start_range_pass(device::CounterSet* set, bool first_pass, bool whole_graph, bool flushes);
  // KREPLAY_COUNTER_API=profiler*: the same four entry points on the legacy profiler API.
  Result<cupti::ProfilerApiSession*> session_for_current_context();
  Status start_launch_pass_api(cupti::ProfilerApiSession* s, CudaLaunch& launch,
                               CudaCounterSet* set);
  Result<std::vector<std::vector<device::CounterValue>>> end_pass_api(CudaLaunch& launch);
  Status start_range_pass_api(device::CounterSet* set, bool first_pass, bool whole_graph,
                              bool flushes);
  Result<std::vector<std::vector<device::CounterValue>>> end_range_pass_api(size_t launches);
  /// Drop the calling context's profiler object: the next use enables a fresh one (after CUPTI
  /// failed, so that one failure loses one collection, not the rest of the run).
  void reset_profiler();

  CUdevice dev_;
  int ordinal_ = 0;
  std::once_flag chip_once_;
  std::string chip_;
  std::mutex mu_;
  std::map<CUcontext, std::unique_ptr<cupti::RangeProfiler>> profilers_;
  std::map<CUcontext, std::unique_ptr<cupti::ProfilerApiSession>> sessions_;  // profiler API
  uint64_t api_ranges_ = 0;   // profiler API, kernel replay: user ranges named so far
  std::string api_range_;     // the name of the open collection's range
  Status unavailable_;  // set once when the device cannot be profiled
  bool checked_ = false;
  size_t max_range_launches_ = 64;
  std::atomic<bool> patches_code_{false};  // a set created so far has SASS-patched metrics
  // Warm start (cuda_warm_start.cpp), under mu_.
  CudaDevice* device_ = nullptr;
  std::weak_ptr<CudaCounterSet> last_set_;  // the config created last
  std::set<std::pair<CUcontext, std::vector<std::string>>> warm_tried_;
  WarmStartCost warm_cost_;
  bool range_started_ = false;
  bool range_user_ = false;  // the open range pass is one user range around a graph launch
  // A range's counter collection has passes still to come (its profiler must not be given up).
  bool range_midway_ = false;
  std::atomic<bool> used_{false};
  CUcontext range_ctx_ = nullptr;      // the context the open range pass counts on
  std::vector<size_t> range_flushes_;  // range_flush() positions in the open range pass
};

}  // namespace kreplay::cuda
