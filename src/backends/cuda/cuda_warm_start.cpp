// CudaCounterBackend::warm_start (KREPLAY_WARM_START, default 1; cuda_counters.hpp says why).
//
// The engine calls it (Hooks::warm_start) with the device's window held, before a replay window
// opens: in kernel replay before the dispatch's snapshot, in range replay before the range's
// snapshot. The application's launch has not been submitted yet (the interceptor is in its API
// ENTER callback), so nothing of that dispatch -- snapshot interval, passes, restores -- runs
// while the warm-up does. What the warm-up does is what bench/cuda/profiler_api_cost.cu's case
// range_warm_full measured to work (first dispatch at steady cost, no NaN): configure the set as
// the dispatch's first pass would (range mode and image size), begin(), every pass with one
// launch of a tiny kernel of kreplay's own, decode(), values(). A warm-up of one empty pass, or
// one pass with a launch, made later values NaN (bench/RESULTS.md, "What one CUPTI pass
// costs"), so nothing short of a whole collection is tried. Its CUPTI calls are left out of the
// profiler's per-call cost rows (restore_collection_costs) and counted in warm_cost_ instead.
#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_counters.hpp"
#include "backends/cuda/cupti/metric_sets.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "common/env.hpp"
#include "common/logging.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::cuda {
namespace {

// KREPLAY_WARM_START: 1 (the default) a whole collection of the dispatch's set; light (an
// experiment, not yet measured on a GPU) a whole collection of a one-pass set instead, after
// which the dispatch's own set starts on a fresh profiler object
// (bench/cuda/profiler_api_cost's range_warm_light asks whether that still moves the first
// Start); 0 none.
enum class WarmMode { kOff, kFull, kLight };

WarmMode warm_mode() {
  static const WarmMode mode = [] {
    const auto v = env::get("KREPLAY_WARM_START");
    if (!v || v->empty()) return WarmMode::kFull;
    if (*v == "light") return WarmMode::kLight;
    if (std::optional<bool> on = env::parse_bool(*v)) return *on ? WarmMode::kFull : WarmMode::kOff;
    KR_WARN("KREPLAY_WARM_START='{}' is not a choice; use 1 (the default), 0 or light", *v);
    return WarmMode::kFull;
  }();
  return mode;
}

/// A warm-up collection never needs more passes than this (the 16-metric set takes 10).
constexpr size_t kMaxWarmPasses = 64;

}  // namespace

WarmStartCost CudaCounterBackend::warm_start_cost() {
  std::lock_guard lock(mu_);
  return warm_cost_;
}

void CudaCounterBackend::warm_start(device::Launch& launch, bool range) {
  // After a fallback to the profiler API, no warm start. Not probed here: creating the context's
  // range profiler would mark the context as one that counted (below); where it cannot be
  // enabled, this collection's own enable fails, falls back (profiler_for_current_context) and
  // counts as a failed warm start.
  const WarmMode warm = warm_mode();
  if (warm == WarmMode::kOff || !range_profiler_counter_api()) return;
  auto* cl = dynamic_cast<CudaLaunch*>(&launch);
  if (cl == nullptr || cl->capturing) return;
  InternalScope internal;
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) return;
  // The range mode and image size the dispatch's first counter pass configures (start_launch_pass,
  // start_range_pass): a graph launch is one user range; otherwise auto range, one range per
  // kernel-replay pass or range_capacity() in range replay (with room for the flushes' ranges
  // under --cache-control all: a range that is replayed flushes between its launches).
  const bool graph = launch.graph() != nullptr;
  const auto mode = graph ? cupti::RangeMode::kUser : cupti::RangeMode::kAuto;
  std::shared_ptr<CudaCounterSet> set;
  size_t ranges = 1;
  {
    std::lock_guard lock(mu_);
    if (device_ == nullptr || (checked_ && !unavailable_.ok())) return;
    set = last_set_.lock();
    if (set == nullptr) return;
    if (!warm_tried_.insert({ctx, set->names()}).second) return;  // once per (context, config)
    // A context that counted already has paid its first Start (or is mid-collection).
    if (profilers_.count(ctx) != 0) return;
    ranges =
        range && !graph ? range_capacity(sdk::Runtime::get().engine().options().flush_caches) : 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t first_start_ns = 0;
  size_t passes = 0;
  size_t nan_values = 0;
  bool profiling = false;  // a profiler object exists: a failure resets it
  Status s = [&]() -> Status {
    // Unprofiled first: loads kreplay's kernels, allocates the scratch and checks that they run
    // in this context (a collection whose passes profile no launch decodes to NaN later).
    RETURN_IF_ERROR(device_->tiny_launch(ctx));
    // The application's queued work finishes before profiling starts, with the engine's time
    // limit (the dispatch's snapshot drains the device right after anyway).
    RETURN_IF_ERROR(device_->drain(sdk::Runtime::get().engine().options().drain_timeout_ms));
    ready_current_context();  // after tiny_launch, which may have loaded kreplay's module
    ASSIGN_OR_RETURN(cupti::RangeProfiler * rp, profiler_for_current_context());
    profiling = true;
    const cupti::RangeProfilerCosts before = rp->costs();
    const std::vector<std::string> metrics =
        warm == WarmMode::kLight ? cupti::one_pass_sm_metrics() : set->names();
    if (rp->metrics() != metrics || rp->mode() != mode || rp->max_ranges() < ranges) {
      RETURN_IF_ERROR(rp->configure(metrics, mode, ranges));
    }
    RETURN_IF_ERROR(rp->begin());
    for (bool done = false; !done; ++passes) {
      if (passes == kMaxWarmPasses) {
        return Error(KREPLAY_STATUS_ERROR,
                     fmt::format("no last pass after {} passes", kMaxWarmPasses));
      }
      RETURN_IF_ERROR(rp->start());
      if (passes == 0) first_start_ns = rp->costs().start.last_ns;
      Status launched =
          mode == cupti::RangeMode::kUser ? rp->push_range("kreplay_warm_start") : Status::Ok();
      if (launched.ok()) launched = device_->tiny_launch(ctx);
      if (launched.ok() && mode == cupti::RangeMode::kUser) launched = rp->pop_range();
      auto stopped = rp->stop();
      RETURN_IF_ERROR(launched);
      if (!stopped.ok()) return stopped.status();
      done = stopped->all_passes_submitted;
    }
    auto dropped = rp->decode();
    if (!dropped.ok()) return dropped.status();
    auto values = rp->values();
    if (!values.ok()) return values.status();
    if (values->empty()) {
      // Passes that profiled no launch: later values of this object could decode to NaN, so the
      // dispatch starts on a fresh one instead.
      return Error(KREPLAY_STATUS_ERROR,
                   "the collection decoded no range (its launches were not "
                   "profiled)");
    }
    for (const auto& r : *values) {
      for (double v : r.values) nan_values += std::isnan(v) ? 1 : 0;
    }
    rp->restore_collection_costs(before);
    return Status::Ok();
  }();
  const auto ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  if (!s.ok()) {
    KR_DEBUG(
        "counters: warm start on context {} failed after {:.1f} ms ({}); its first counted "
        "dispatch pays the first CUPTI Start",
        static_cast<const void*>(ctx), static_cast<double>(ns) / 1e6, s.message());
    if (profiling) reset_profiler();  // the dispatch starts on a fresh profiler object
    std::lock_guard lock(mu_);
    ++warm_cost_.failed;
    warm_cost_.failed_ns += ns;
    return;
  }
  KR_DEBUG(
      "counters: warm start on context {}: {} passes in {:.1f} ms (first Start {:.1f} ms, "
      "{} NaN values of its own)",
      static_cast<const void*>(ctx), passes, static_cast<double>(ns) / 1e6,
      static_cast<double>(first_start_ns) / 1e6, nan_values);
  std::lock_guard lock(mu_);
  ++warm_cost_.runs;
  warm_cost_.total_ns += ns;
  if (ns > warm_cost_.max_ns) warm_cost_.max_ns = ns;
  warm_cost_.first_start_ns += first_start_ns;
  warm_cost_.passes += passes;
  warm_cost_.nan_values += nan_values;
}

}  // namespace kreplay::cuda
