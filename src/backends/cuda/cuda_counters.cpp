#include "backends/cuda/cuda_counters.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>

#include "backends/cuda/cuda_backend.hpp"
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "backends/cuda/cupti/cupti_common.hpp"
#include "backends/cuda/cupti/profiler_api.hpp"
#include "backends/cuda/cupti/profiler_host.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "common/env.hpp"
#include "common/logging.hpp"
#include "device/range_flushes.hpp"

namespace kreplay::cuda {
namespace {

// After a collection's last pass: decode it and read every range's values.
Result<std::vector<cupti::RangeValues>> decode_ranges(cupti::RangeProfiler& rp) {
  auto dropped = rp.decode();
  if (!dropped.ok()) return dropped.status();
  if (*dropped > 0) KR_WARN_ONCE("ranges-dropped", "CUPTI dropped {} counter ranges", *dropped);
  return rp.values();
}

/// KREPLAY_COUNTER_API (cuda_counters.hpp), read once.
enum class CounterApi { kRange, kProfilerKept, kProfilerSetConfig, kProfilerPerDispatch };
CounterApi counter_api() {
  static const CounterApi api = [] {
    const char* env = std::getenv("KREPLAY_COUNTER_API");
    std::string v = env ? env : "";
    if (v.empty() || v == "range") return CounterApi::kRange;
    if (v == "profiler") return CounterApi::kProfilerKept;
    if (v == "profiler-setconfig") return CounterApi::kProfilerSetConfig;
    if (v == "profiler-per-dispatch") return CounterApi::kProfilerPerDispatch;
    KR_WARN("KREPLAY_COUNTER_API={}: not one of range, profiler, profiler-setconfig, "
            "profiler-per-dispatch; using range",
            v);
    return CounterApi::kRange;
  }();
  return api;
}

/// KREPLAY_COUNTER_API unset: the range profiler, and CUPTI's profiler API for the rest of the
/// process once the range profiler could not be enabled on a context (profiler_for_current_context).
std::atomic<bool> g_fell_back{false};

/// KREPLAY_COUNTER_API was given (then there is no fallback), read once: asked on every pass.
bool counter_api_chosen() {
  static const bool chosen = [] {
    const char* env = std::getenv("KREPLAY_COUNTER_API");
    return env != nullptr && *env != '\0';
  }();
  return chosen;
}

CounterApi effective_counter_api() {
  return g_fell_back.load(std::memory_order_acquire) ? CounterApi::kProfilerKept : counter_api();
}

bool profiler_api() {
  return effective_counter_api() != CounterApi::kRange;
}

/// Test seam (GPU tests of the fallback): KREPLAY_TEST_RANGE_PROFILER_UNAVAILABLE=1 makes
/// enabling the range profiler fail as it does where the driver lacks it.
bool range_profiler_disabled_for_test() {
  static const bool off = env::get_bool("KREPLAY_TEST_RANGE_PROFILER_UNAVAILABLE", false);
  return off;
}

/// A range pass's values per launch from its decoded @p ranges: auto range makes one range per
/// kernel in submission order, the launches' and those of the cache flushes made between them
/// (at @p flushes, range_flush), which are left out. Warns once when the count is not the one
/// expected.
std::vector<std::vector<device::CounterValue>> launch_values(
    const std::vector<std::string>& metrics, const std::vector<cupti::RangeValues>& ranges,
    size_t launches, const std::vector<size_t>& flushes) {
  std::vector<std::vector<device::CounterValue>> out;
  const std::vector<size_t> mine = device::launch_ranges(ranges.size(), flushes);
  for (size_t i = 0; i < launches && i < mine.size(); ++i) {
    auto& vals = out.emplace_back();
    const cupti::RangeValues& r = ranges[mine[i]];
    for (size_t m = 0; m < metrics.size() && m < r.values.size(); ++m)
      vals.push_back({metrics[m], r.values[m]});
  }
  if (ranges.size() != launches + flushes.size()) {
    KR_WARN_ONCE("range-count",
                 "CUPTI reported {} ranges for {} launches and {} cache flushes of a range",
                 ranges.size(), launches, flushes.size());
  }
  return out;
}

/// Launches one pass of a profiler-API session may hold (BeginSession's maxLaunchesPerPass): a
/// graph launch is one user range around all of its kernels.
constexpr size_t kApiLaunchesPerPass = 256;

}  // namespace

bool range_profiler_counter_api() {
  return !profiler_api();
}

bool CudaCounterBackend::use_profiler_api() {
  if (profiler_api()) return true;
  if (counter_api_chosen()) return false;
  // The default: the range profiler, unless it cannot be enabled on this context.
  return !profiler_for_current_context().ok() && profiler_api();
}

CudaCounterBackend::CudaCounterBackend(CUdevice dev, int ordinal, std::string chip_guess)
    : dev_(dev), ordinal_(ordinal), chip_(std::move(chip_guess)) {}

CudaCounterBackend::~CudaCounterBackend() = default;

std::string chip_name(int ordinal) {
  InternalScope internal;
  auto init = KR_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
  if (cuptiProfilerInitialize(&init) != CUPTI_SUCCESS) return "";
  auto p = KR_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  p.deviceIndex = static_cast<size_t>(ordinal);
  if (cuptiDeviceGetChipName(&p) != CUPTI_SUCCESS || p.pChipName == nullptr) return "";
  return p.pChipName;
}

const std::string& CudaCounterBackend::chip() {
  std::call_once(chip_once_, [this] {
    std::string name = chip_name(ordinal_);
    if (!name.empty()) chip_ = name;
  });
  return chip_;
}

Result<std::vector<device::CounterDesc>> CudaCounterBackend::list() {
  InternalScope internal;
  auto host = cupti::ProfilerHost::shared(chip());
  if (!host.ok()) return host.status();
  auto metrics = (*host)->list_metrics();
  if (!metrics.ok()) return metrics.status();
  std::vector<device::CounterDesc> out;
  out.reserve(metrics->size());
  for (const auto& m : *metrics) {
    std::string desc = m.description;
    if (!m.suffixes.empty()) {
      desc += fmt::format(" [suffixes: {}]", fmt::join(m.suffixes, " "));
    }
    out.push_back({m.name, desc, m.unit, m.type});
  }
  return out;
}

Result<std::shared_ptr<device::CounterSet>> CudaCounterBackend::create(
    const std::vector<std::string>& names) {
  InternalScope internal;
  auto host = cupti::ProfilerHost::shared(chip());
  if (!host.ok()) return host.status();
  RETURN_IF_ERROR((*host)->validate(names));
  auto passes = (*host)->pass_count(names);
  if (!passes.ok()) return passes.status();
  auto set = std::make_shared<CudaCounterSet>(names, *passes);
  for (const std::string& n : names) {
    if (n.rfind("smsp__sass_", 0) == 0 || n.rfind("sass__", 0) == 0)
      patches_code_.store(true, std::memory_order_release);
  }
  {
    std::lock_guard lock(mu_);
    last_set_ = set;  // the one a warm start collects (cuda_warm_start.cpp)
  }
  return std::shared_ptr<device::CounterSet>(std::move(set));
}

Result<cupti::RangeProfiler*> CudaCounterBackend::profiler_for_current_context() {
  InternalScope internal;
  std::lock_guard lock(mu_);
  if (!checked_) {
    checked_ = true;
    unavailable_ = cupti::RangeProfiler::device_supported(dev_);
    if (!unavailable_.ok()) KR_ERROR("hardware counters are not available: {}", unavailable_.message());
  }
  if (!unavailable_.ok()) return unavailable_;
  CUcontext ctx = nullptr;
  KR_CU(cuCtxGetCurrent(&ctx));
  auto& p = profilers_[ctx];
  used_.store(true);
  if (!p) {
    auto created = range_profiler_disabled_for_test()
                       ? Result<std::unique_ptr<cupti::RangeProfiler>>(
                             Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                                   "cuptiRangeProfilerEnable: disabled by "
                                   "KREPLAY_TEST_RANGE_PROFILER_UNAVAILABLE"))
                       : cupti::RangeProfiler::create(ctx);
    if (!created.ok() && !counter_api_chosen()) {
      // The device supports profiling but the range profiler cannot be enabled here (a driver
      // older than the range profiler): the profiler API counts the same metrics.
      profilers_.erase(ctx);
      if (!g_fell_back.exchange(true)) {
        KR_WARN(
            "counters: CUPTI's range profiler is not available ({}); counting with CUPTI's "
            "profiler API instead (KREPLAY_COUNTER_API=profiler)",
            created.status().message());
      }
      return created.status();
    }
    if (!created.ok()) {
      unavailable_ = created.status();
      KR_ERROR("hardware counters are not available: {}", unavailable_.message());
      return unavailable_;
    }
    p = std::move(created).value();
  }
  return p.get();
}

void CudaCounterBackend::ready_current_context() {
  if (device_ == nullptr) return;
  CUcontext ctx = nullptr;
  {
    InternalScope internal;
    if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) return;
  }
  device_->ready_for_profiling(ctx);
}

cupti::RangeProfiler* CudaCounterBackend::profiler() {
  auto p = profiler_for_current_context();
  return p.ok() ? *p : nullptr;
}

std::vector<cupti::RangeProfiler*> CudaCounterBackend::existing_profilers() {
  std::lock_guard lock(mu_);
  std::vector<cupti::RangeProfiler*> out;
  for (auto& [ctx, p] : profilers_) {
    if (p) out.push_back(p.get());
  }
  return out;
}

std::vector<cupti::ProfilerApiSession*> CudaCounterBackend::existing_sessions() {
  std::lock_guard lock(mu_);
  std::vector<cupti::ProfilerApiSession*> out;
  for (auto& [ctx, s] : sessions_) {
    if (s) out.push_back(s.get());
  }
  return out;
}

void CudaCounterBackend::reset_profiler() {
  InternalScope internal;
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) return;
  std::unique_ptr<cupti::RangeProfiler> old;
  std::unique_ptr<cupti::ProfilerApiSession> old_session;  // ends its session when destroyed
  {
    std::lock_guard lock(mu_);
    if (auto si = sessions_.find(ctx); si != sessions_.end()) {
      old_session = std::move(si->second);
      sessions_.erase(si);
    }
    auto it = profilers_.find(ctx);
    if (it == profilers_.end() && !old_session) return;
    if (it != profilers_.end()) {
      old = std::move(it->second);
      profilers_.erase(it);
    }
  }
  range_started_ = false;
  range_user_ = false;
  range_midway_ = false;
}

bool CudaCounterBackend::holds_profiler_here() {
  CUcontext ctx = nullptr;
  if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) return false;
  std::lock_guard lock(mu_);
  auto it = profilers_.find(ctx);
  auto si = sessions_.find(ctx);
  const bool session = si != sessions_.end() && si->second;
  return (it != profilers_.end() && it->second) || session;
}

bool CudaCounterBackend::yield_profiler(CudaLaunch& launch) {
  if (launch.counter_set != nullptr && !launch.counter_collection_done) return false;
  if (range_midway_ || !holds_profiler_here()) return false;
  reset_profiler();
  launch.counter_set = nullptr;  // a later counter pass of this launch configures afresh
  return true;
}

Status CudaCounterBackend::begin_pass(device::Launch& launch,
                                      std::span<device::CounterSet* const> sets) {
  auto* cl = dynamic_cast<CudaLaunch*>(&launch);
  if (cl == nullptr) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "not a CUDA launch");
  if (sets.size() != 1) {
    return Error(KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT,
                 "one counter config per pass on CUDA: put every metric in one config");
  }
  if (cl->capturing) return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "stream is being captured");
  auto* set = static_cast<CudaCounterSet*>(sets[0]);
  ready_current_context();
  if (use_profiler_api()) {
    ASSIGN_OR_RETURN(cupti::ProfilerApiSession * session, session_for_current_context());
    const bool mid = cl->counter_set == set && !cl->counter_collection_done;
    Status s = start_launch_pass_api(session, *cl, set);
    if (s.ok()) return s;
    KR_WARN("counters: {}; starting over on a fresh profiler-API session", s.message());
    reset_profiler();
    cl->counter_set = nullptr;
    cl->counter_started = false;
    if (mid) return s;
    ASSIGN_OR_RETURN(session, session_for_current_context());
    return start_launch_pass_api(session, *cl, set);
  }
  ASSIGN_OR_RETURN(cupti::RangeProfiler * rp, profiler_for_current_context());
  const bool mid_collection = cl->counter_set == set && !cl->counter_collection_done;
  Status s = start_launch_pass(rp, *cl, set);
  if (s.ok()) return s;
  // CUPTI failed: start over on a fresh profiler object. A collection that had passes behind it
  // cannot go on there: this dispatch's counters are lost, the next dispatch counts again.
  KR_WARN("counters: {}; starting over on a fresh profiler object", s.message());
  reset_profiler();
  cl->counter_set = nullptr;
  cl->counter_started = false;
  if (mid_collection) return s;
  ASSIGN_OR_RETURN(rp, profiler_for_current_context());
  return start_launch_pass(rp, *cl, set);
}

Status CudaCounterBackend::start_launch_pass(cupti::RangeProfiler* rp, CudaLaunch& launch,
                                             CudaCounterSet* set) {
  CudaLaunch* cl = &launch;
  InternalScope internal;
  // A graph launch is one user range: the auto range cannot profile graphs.
  const bool graph = cl->api == LaunchApi::kGraph;
  const auto mode = graph ? cupti::RangeMode::kUser : cupti::RangeMode::kAuto;
  if (cl->counter_set != set) {
    // A new collection for this dispatch.
    if (rp->metrics() != set->names() || rp->mode() != mode) {
      // One range: a kernel-replay pass holds exactly one launch, and the smallest counter-data
      // image is the cheapest to initialise and to close (bench/cuda/pass_cost.cu, case
      // ten_ranges1: 0.08 ms to initialise against 0.6 ms for 4 ranges, values intact).
      RETURN_IF_ERROR(rp->configure(set->names(), mode, 1));
    }
    RETURN_IF_ERROR(rp->begin());
    cl->counter_set = set;
    cl->counter_collection_done = false;
  } else if (cl->counter_collection_done) {
    // The set was complete on an earlier pass of this dispatch: collect it again from scratch.
    RETURN_IF_ERROR(rp->begin());
    cl->counter_collection_done = false;
  }
  RETURN_IF_ERROR(rp->start());
  if (graph) {
    if (Status s = rp->push_range("graph"); !s.ok()) {
      (void)rp->stop();
      return s;
    }
  }
  cl->counter_started = true;
  return Status::Ok();
}

Result<std::vector<std::vector<device::CounterValue>>> CudaCounterBackend::end_pass(
    device::Launch& launch) {
  auto* cl = dynamic_cast<CudaLaunch*>(&launch);
  if (cl == nullptr) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "not a CUDA launch");
  std::vector<std::vector<device::CounterValue>> out;
  if (!cl->counter_started) return out;
  cl->counter_started = false;
  if (use_profiler_api()) return end_pass_api(*cl);
  ASSIGN_OR_RETURN(cupti::RangeProfiler * rp, profiler_for_current_context());
  InternalScope internal;
  // A failure loses this collection; a fresh profiler object counts the next one.
  auto failed = [&](Status s) {
    reset_profiler();
    cl->counter_set = nullptr;
    return s;
  };
  if (rp->mode() == cupti::RangeMode::kUser) {
    if (Status s = rp->pop_range(); !s.ok()) return failed(s);
  }
  auto stopped = rp->stop();
  if (!stopped.ok()) return failed(stopped.status());
  const cupti::PassResult pr = *stopped;
  if (!pr.all_passes_submitted) return out;  // more hardware passes to go: no values yet
  cl->counter_collection_done = true;
  auto decoded = decode_ranges(*rp);
  if (!decoded.ok()) return failed(decoded.status());
  std::vector<cupti::RangeValues> ranges = std::move(decoded).value();
  auto& vals = out.emplace_back();
  if (ranges.empty()) return out;
  // Auto range: one range per kernel launch; a dispatch pass holds exactly one launch.
  const auto& r = ranges.back();
  for (size_t i = 0; i < rp->metrics().size() && i < r.values.size(); ++i) {
    vals.push_back({rp->metrics()[i], r.values[i]});
  }
  return out;
}

Status CudaCounterBackend::begin_range_pass(device::CounterSet* set, bool first_pass,
                                            bool whole_graph, bool flushes) {
  ready_current_context();
  Status s = start_range_pass(set, first_pass, whole_graph, flushes);
  if (!s.ok()) {
    KR_WARN("counters: {}; starting over on a fresh profiler object", s.message());
    reset_profiler();
    if (!first_pass) return s;  // the range's collection had passes behind it: lost
    s = start_range_pass(set, true, whole_graph, flushes);
  }
  range_midway_ = s.ok();
  return s;
}

void CudaCounterBackend::range_flush(size_t launches) {
  // Only an auto-range session counts the flush kernel, and only on the context it ran in (the
  // profiler is per context; kreplay's kernels live in the context its MemoryOps was made in).
  if (!range_started_ || range_user_) return;
  if (device_ != nullptr && !device_->own_kernels_in(range_ctx_)) return;
  range_flushes_.push_back(launches);
}

Status CudaCounterBackend::start_range_pass(device::CounterSet* set, bool first_pass,
                                            bool whole_graph, bool flushes) {
  range_flushes_.clear();
  {
    InternalScope internal;
    if (cuCtxGetCurrent(&range_ctx_) != CUDA_SUCCESS) range_ctx_ = nullptr;
  }
  if (use_profiler_api()) return start_range_pass_api(set, first_pass, whole_graph, flushes);
  ASSIGN_OR_RETURN(cupti::RangeProfiler * rp, profiler_for_current_context());
  InternalScope internal;
  const auto mode = whole_graph ? cupti::RangeMode::kUser : cupti::RangeMode::kAuto;
  const size_t ranges = whole_graph ? 1 : range_capacity(flushes);
  if (rp->metrics() != set->names() || rp->mode() != mode || rp->max_ranges() < ranges) {
    RETURN_IF_ERROR(rp->configure(set->names(), mode, ranges));
    first_pass = true;
  }
  if (first_pass) RETURN_IF_ERROR(rp->begin());
  RETURN_IF_ERROR(rp->start());
  if (whole_graph) {
    if (Status s = rp->push_range("graph"); !s.ok()) {
      (void)rp->stop();
      return s;
    }
  }
  range_started_ = true;
  range_user_ = whole_graph;
  return Status::Ok();
}

Result<std::vector<std::vector<device::CounterValue>>> CudaCounterBackend::end_range_pass(
    size_t launches) {
  std::vector<std::vector<device::CounterValue>> out;
  if (!range_started_) return out;
  range_started_ = false;
  if (use_profiler_api()) return end_range_pass_api(launches);
  ASSIGN_OR_RETURN(cupti::RangeProfiler * rp, profiler_for_current_context());
  InternalScope internal;
  auto failed = [&](Status s) {
    reset_profiler();
    return s;
  };
  if (range_user_) {
    range_user_ = false;
    if (Status s = rp->pop_range(); !s.ok()) return failed(s);
  }
  auto stopped = rp->stop();
  if (!stopped.ok()) return failed(stopped.status());
  range_midway_ = !stopped->all_passes_submitted;
  if (!stopped->all_passes_submitted) return out;  // values come with the set's last pass
  auto decoded = decode_ranges(*rp);
  if (!decoded.ok()) return failed(decoded.status());
  out = launch_values(rp->metrics(), *decoded, launches, range_flushes_);
  range_flushes_.clear();
  return out;
}

// ------------------------------------------------------------------------------------------
// KREPLAY_COUNTER_API=profiler*: the legacy profiler API (cupti/profiler_api.hpp)
// ------------------------------------------------------------------------------------------

Result<cupti::ProfilerApiSession*> CudaCounterBackend::session_for_current_context() {
  InternalScope internal;
  std::lock_guard lock(mu_);
  if (!checked_) {
    checked_ = true;
    unavailable_ = cupti::ProfilerApiSession::device_supported(dev_);
    if (!unavailable_.ok()) KR_ERROR("hardware counters are not available: {}", unavailable_.message());
  }
  if (!unavailable_.ok()) return unavailable_;
  CUcontext ctx = nullptr;
  KR_CU(cuCtxGetCurrent(&ctx));
  auto& s = sessions_[ctx];
  used_.store(true);
  if (!s) {
    auto created = cupti::ProfilerApiSession::create(ctx);
    if (!created.ok()) {
      unavailable_ = created.status();
      KR_ERROR("hardware counters are not available: {}", unavailable_.message());
      return unavailable_;
    }
    s = std::move(created).value();
  }
  return s.get();
}

Status CudaCounterBackend::start_launch_pass_api(cupti::ProfilerApiSession* s, CudaLaunch& launch,
                                                 CudaCounterSet* set) {
  InternalScope internal;
  if (launch.counter_set != set || launch.counter_collection_done) {
    // A new collection: one user range per dispatch, named uniquely so that a kept session gives
    // each dispatch a range of its own (CUPTI keeps one range per range stack).
    cupti::ProfilerApiOptions o;
    o.mode = cupti::RangeMode::kUser;
    const CounterApi api = effective_counter_api();
    o.scope = api == CounterApi::kProfilerPerDispatch ? cupti::SessionScope::kPerDispatch
                                                      : cupti::SessionScope::kKept;
    o.kept_reset = api == CounterApi::kProfilerSetConfig ? cupti::KeptReset::kSetConfig
                                                         : cupti::KeptReset::kNone;
    o.max_ranges = o.scope == cupti::SessionScope::kKept ? 64 : 1;
    o.max_ranges_per_pass = 1;
    o.max_launches_per_pass = kApiLaunchesPerPass;
    const cupti::ProfilerApiOptions& cur = s->options();
    if (s->metrics() != set->names() || cur.mode != o.mode || cur.scope != o.scope ||
        cur.kept_reset != o.kept_reset || cur.max_ranges != o.max_ranges ||
        cur.max_ranges_per_pass != o.max_ranges_per_pass ||
        cur.max_launches_per_pass != o.max_launches_per_pass) {
      RETURN_IF_ERROR(s->configure(set->names(), o));
    }
    RETURN_IF_ERROR(s->begin());
    api_range_ = fmt::format("k{}", ++api_ranges_);
    launch.counter_set = set;
    launch.counter_collection_done = false;
  }
  RETURN_IF_ERROR(s->start());
  if (Status st = s->push_range(api_range_); !st.ok()) {
    (void)s->stop();
    return st;
  }
  launch.counter_started = true;
  return Status::Ok();
}

Result<std::vector<std::vector<device::CounterValue>>> CudaCounterBackend::end_pass_api(
    CudaLaunch& launch) {
  std::vector<std::vector<device::CounterValue>> out;
  ASSIGN_OR_RETURN(cupti::ProfilerApiSession * s, session_for_current_context());
  InternalScope internal;
  auto failed = [&](Status st) {
    reset_profiler();
    launch.counter_set = nullptr;
    return st;
  };
  if (Status st = s->pop_range(); !st.ok()) return failed(st);
  auto stopped = s->stop();
  if (!stopped.ok()) return failed(stopped.status());
  range_midway_ = !stopped->all_passes_submitted;
  if (!stopped->all_passes_submitted) return out;
  launch.counter_collection_done = true;
  auto dropped = s->decode();
  if (!dropped.ok()) return failed(dropped.status());
  if (*dropped > 0) KR_WARN_ONCE("ranges-dropped", "CUPTI dropped {} counter ranges", *dropped);
  auto ranges = s->values();
  if (!ranges.ok()) return failed(ranges.status());
  auto& vals = out.emplace_back();
  if (ranges->empty()) return out;
  const auto& r = ranges->back();  // the collection's one range
  for (size_t i = 0; i < s->metrics().size() && i < r.values.size(); ++i) {
    vals.push_back({s->metrics()[i], r.values[i]});
  }
  return out;
}

Status CudaCounterBackend::start_range_pass_api(device::CounterSet* set, bool first_pass,
                                                bool whole_graph, bool flushes) {
  ASSIGN_OR_RETURN(cupti::ProfilerApiSession * s, session_for_current_context());
  InternalScope internal;
  // A session per collection, as the range profiler's begin(): auto range makes each launch of
  // the range a range of its own, in submission order.
  cupti::ProfilerApiOptions o;
  o.mode = whole_graph ? cupti::RangeMode::kUser : cupti::RangeMode::kAuto;
  o.scope = cupti::SessionScope::kPerDispatch;
  o.max_ranges = whole_graph ? 1 : range_capacity(flushes);
  o.max_launches_per_pass = whole_graph ? kApiLaunchesPerPass : 0;
  const cupti::ProfilerApiOptions& cur = s->options();
  if (s->metrics() != set->names() || cur.mode != o.mode || cur.scope != o.scope ||
      cur.max_ranges < o.max_ranges || cur.max_launches_per_pass != o.max_launches_per_pass) {
    RETURN_IF_ERROR(s->configure(set->names(), o));
    first_pass = true;
  }
  if (first_pass) RETURN_IF_ERROR(s->begin());
  RETURN_IF_ERROR(s->start());
  if (whole_graph) {
    if (Status st = s->push_range("graph"); !st.ok()) {
      (void)s->stop();
      return st;
    }
  }
  range_started_ = true;
  range_user_ = whole_graph;
  return Status::Ok();
}

Result<std::vector<std::vector<device::CounterValue>>> CudaCounterBackend::end_range_pass_api(
    size_t launches) {
  std::vector<std::vector<device::CounterValue>> out;
  ASSIGN_OR_RETURN(cupti::ProfilerApiSession * s, session_for_current_context());
  InternalScope internal;
  auto failed = [&](Status st) {
    reset_profiler();
    return st;
  };
  if (range_user_) {
    range_user_ = false;
    if (Status st = s->pop_range(); !st.ok()) return failed(st);
  }
  auto stopped = s->stop();
  if (!stopped.ok()) return failed(stopped.status());
  range_midway_ = !stopped->all_passes_submitted;
  if (!stopped->all_passes_submitted) return out;
  auto dropped = s->decode();
  if (!dropped.ok()) return failed(dropped.status());
  if (*dropped > 0) KR_WARN_ONCE("ranges-dropped", "CUPTI dropped {} counter ranges", *dropped);
  auto ranges = s->values();
  if (!ranges.ok()) return failed(ranges.status());
  out = launch_values(s->metrics(), *ranges, launches, range_flushes_);
  range_flushes_.clear();
  return out;
}

}  // namespace kreplay::cuda
