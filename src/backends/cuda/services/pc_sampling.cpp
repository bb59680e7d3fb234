// PC sampling on CUDA (cupti_pcsampling.h): warp-state samples per PC with their stall reasons,
// what ncu's WarpStateStats section and source page show.
//
// Kernel-serialized collection mode with start/stop control. What the H200 showed (CUDA 13.0,
// driver 580; bench/cuda/pc_sampling_probe.cpp, bench/RESULTS.md, eleventh and twelfth sessions):
//   - CUPTI samples a kernel only if, once any profiling has begun on the context (PC sampling
//     enabled once, or the range profiler), the kernel's next launch ran with PC sampling
//     enabled. A kernel launched there with it disabled first (a counter pass, a timing pass, the
//     application's own launch between windows) gets no sample ever after, every call succeeding.
//   - PC sampling collects nothing while the range profiler is enabled on the context.
//   - The range profiler counts while PC sampling is enabled but not started, except after a
//     module was loaded into the context while PC sampling was enabled there (an application
//     module, or kreplay's own memory kernels), or once PC sampling was started since its enable:
//     then the counter-availability read and cuptiRangeProfilerStart fail with
//     CUPTI_ERROR_INVALID_PARAMETER, and PM sampling's SetConfig with HARDWARE_BUSY, until PC
//     sampling is disabled and enabled again (~80 ms, and more for the enable's setup).
// So PC sampling is enabled on each context before any kernel runs there (when the context is
// created, else at its first launch: prepare) and stays enabled: a pass gives the counters' range
// profiler up (make_room), starts, stops and reads every PC. A pass or a module load marks its
// context, and before the counters or PM sampling begin there (ready_for_profiling) PC sampling
// is disabled and enabled again, with no kernel in between; a run without them never pays that.
// Kernels are serialized while it is enabled.
// KREPLAY_PC_SAMPLING_KEEP_ENABLED=0 restores the older way (enabled for its own passes only; a
// kernel counted before its first PC-sampling pass then gets no sample, and flush says so).
//
// One sample per (function, PC, stall reason) with the number of samples. CUPTI gives no
// instruction text: it and the source line come from the module's cubin when kreplay kept it
// (cupti_service.hpp: add_sources; the text is nvdisasm's, disassembly.hpp).
#include <cupti_pcsampling.h>
#include <fmt/format.h>

#include <chrono>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cupti/cupti_common.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"
#include "backends/cuda/cupti/service_catalog.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/services/cupti_service.hpp"
#include "common/env.hpp"
#include "common/logging.hpp"

namespace kreplay::cuda::services {
namespace {

constexpr const char* kService = "PC sampling";
constexpr size_t kPcsPerBuffer = 4096;  // ~ what CUPTI's default 1 MB scratch buffer holds

/// A CUpti_PCSamplingData with room for kPcsPerBuffer PCs of every stall reason.
struct PcBuffer {
  CUpti_PCSamplingData data{};
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<CUpti_PCSamplingStallReason> reasons;

  explicit PcBuffer(size_t num_reasons)
      : pcs(kPcsPerBuffer), reasons(kPcsPerBuffer * std::max<size_t>(num_reasons, 1)) {
    data.size = sizeof(CUpti_PCSamplingData);
    data.collectNumPcs = pcs.size();
    data.pPcData = pcs.data();
    for (size_t i = 0; i < pcs.size(); ++i) {
      pcs[i].size = sizeof(CUpti_PCSamplingPCData);
      pcs[i].stallReason = &reasons[i * std::max<size_t>(num_reasons, 1)];
    }
  }
};

// PC sampling enabled and configured on one context, not started; the buffers live as long as
// CUPTI may write to them.
struct Enabled {
  std::vector<cupti::StallReason> reasons;
  std::unique_ptr<PcBuffer> config_buffer;  // SAMPLING_DATA_BUFFER: what Disable writes
  std::unique_ptr<PcBuffer> read_buffer;    // cuptiPCSamplingGetData's
  uint64_t period = 0;                      // as configured (0: CUPTI's default)
  device::ServiceSettings settings;         // what it was enabled with (refresh enables again)
};

struct Armed {
  CUcontext ctx = nullptr;
  device::ServiceSettings settings;
};

using Key = std::tuple<std::string, uint64_t, uint64_t, uint32_t>;  // function, pc, crc, reason
using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

class CudaPcSampling final : public device::PassService {
 public:
  explicit CudaPcSampling(CudaDevice* dev) : dev_(dev) {}

  kreplay_pass_service_kind_t kind() const override { return KREPLAY_PASS_SERVICE_PC_SAMPLING; }

  // The reasons a pass saw; before any pass, those of the device's primary context (enabling PC
  // sampling there for the query, which a tool should not do while kernels run).
  std::vector<device::ServiceMetric> metrics() const override {
    std::vector<cupti::StallReason> reasons;
    {
      std::lock_guard lock(mu_);
      reasons = reasons_seen_;
    }
    if (reasons.empty()) {
      auto queried = cupti::pc_stall_reasons_of_device(static_cast<int>(dev_->desc().device_index));
      if (queried.ok()) reasons = std::move(queried).value();
    }
    std::vector<device::ServiceMetric> out;
    for (const auto& r : reasons)
      out.push_back({r.name, "PC-sampling stall reason (CUPTI).", true});
    return out;
  }

  Status configure(device::ServiceSettings& settings) const override {
    if (!settings.metrics.empty()) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   "PC sampling takes no metrics: every stall reason is sampled");
    }
    // 0 stays 0: CUPTI's own default period (it depends on the number of SMs).
    if (settings.period != 0 && (settings.period < 5 || settings.period > 31)) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("PC sampling period 2^{} cycles is out of range; use 5 to 31",
                               settings.period));
    }
    return Status::Ok();
  }

  // The context was just created (its CUPTI resource callback): enable PC sampling before any
  // kernel runs there.
  void context_created(CUcontext ctx, const device::ServiceSettings& settings) {
    if (!keep_enabled()) return;
    InternalScope internal;
    std::lock_guard lock(ctx_mu_);
    if (Status s = enable_on(ctx, settings, nullptr); !s.ok()) {
      KR_WARN_ONCE("pcsamp-context",
                   "PC sampling could not be enabled on a new context ({}); it is enabled at the "
                   "context's first launch instead",
                   s.message());
    }
  }

  // A context kreplay did not see created (or whose enable failed then): enable at its first
  // launch, ahead of anything else collecting there.
  void prepare(device::Launch& launch, const device::ServiceSettings& settings) override {
    if (!keep_enabled()) return;
    auto cl = cuda_launch(launch);
    auto ctx = current_context();
    if (!cl.ok() || !ctx.ok() || (*cl)->capturing) return;
    InternalScope internal;
    std::lock_guard lock(ctx_mu_);
    if (Status s = enable_on(*ctx, settings, *cl); !s.ok()) {
      KR_WARN_ONCE("pcsamp-prepare",
                   "PC sampling could not be enabled on a context before its first window ({}); "
                   "kernels launched there before its passes may get no sample",
                   s.message());
    }
  }

  // A module was loaded in @p ctx (its resource callback, where no CUPTI call is made).
  void module_loaded(CUcontext ctx) {
    if (!keep_enabled()) return;  // then it is enabled only during its own passes
    std::lock_guard lock(mu_);
    stale_.insert(ctx);
  }

  // The counters (or PM sampling, device-wide: @p ctx nullptr means every context) are about to
  // begin: where PC sampling was started, or a module was loaded, since it was enabled there,
  // disable and enable it again first (the header comment: the range profiler cannot read the
  // counter availability or start otherwise, PM sampling's SetConfig answers HARDWARE_BUSY). No
  // kernel runs in between, so every kernel keeps being sampled.
  void ready_for_profiling(CUcontext ctx) {
    std::vector<CUcontext> todo;
    {
      std::lock_guard lock(mu_);
      if (ctx != nullptr) {
        if (stale_.erase(ctx) != 0) todo.push_back(ctx);
      } else {
        todo.assign(stale_.begin(), stale_.end());
        stale_.clear();
      }
    }
    if (todo.empty()) return;
    InternalScope internal;
    std::lock_guard lock(ctx_mu_);
    for (CUcontext c : todo) refresh(c);
  }

  Status begin_pass(device::Launch& launch, const device::ServiceSettings& settings) override {
    ASSIGN_OR_RETURN(CudaLaunch * cl, cuda_launch(launch));
    if (cl->capturing) return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "stream is being captured");
    ASSIGN_OR_RETURN(CUcontext ctx, current_context());
    InternalScope internal;
    const auto t0 = Clock::now();
    // PC sampling collects nothing while the counters' range profiler is enabled here.
    RETURN_IF_ERROR(make_room(dev_, *cl, kService));
    const auto t1 = Clock::now();
    std::lock_guard lock(ctx_mu_);
    RETURN_IF_ERROR(enable_on(ctx, settings, cl));
    const auto t2 = Clock::now();
    CUpti_PCSamplingStartParams start{};
    start.size = CUpti_PCSamplingStartParamsSize;
    start.ctx = ctx;
    const CUptiResult started = cuptiPCSamplingStart(&start);
    KR_DEBUG("PC sampling: start on context {}: {}; ms: counters yield {:.1f}, enable {:.1f}, "
             "start {:.1f}",
             static_cast<const void*>(ctx), cupti::result_name(started), ms_between(t0, t1),
             ms_between(t1, t2), ms_between(t2, Clock::now()));
    RETURN_IF_ERROR(service_status(started, "cuptiPCSamplingStart", kService, dev_));
    ++started_[ctx];
    auto armed = std::make_unique<Armed>();
    armed->ctx = ctx;
    armed->settings = settings;
    armed_.put(launch, std::move(armed));
    return Status::Ok();
  }

  Status end_pass(device::Launch& launch) override {
    std::unique_ptr<Armed> armed = armed_.take(launch);
    if (!armed) return Status::Ok();
    InternalScope internal;
    std::lock_guard lock(ctx_mu_);
    auto it = enabled_.find(armed->ctx);
    if (it == enabled_.end())
      return Error(KREPLAY_STATUS_ERROR_INTERNAL, "PC sampling not enabled");
    Enabled& en = *it->second;
    if (auto st = started_.find(armed->ctx); st != started_.end() && --st->second == 0)
      started_.erase(st);
    std::map<Key, uint64_t> counts;
    CUpti_PCSamplingStopParams stop{};
    stop.size = CUpti_PCSamplingStopParamsSize;
    stop.ctx = armed->ctx;
    const auto t_stop0 = Clock::now();
    Status s = service_status(cuptiPCSamplingStop(&stop), "cuptiPCSamplingStop", kService, dev_);
    const auto t_stop1 = Clock::now();
    // Every PC. In kernel-serialized mode CUPTI fills the configured buffer after the kernel and
    // GetData hands that out (emptying it) and then what did not fit, at most collectNumPcs per
    // call, saying how many remain: call until both are empty, as NVIDIA's PC-sampling sample
    // does at the launch's exit.
    int calls = 0;
    size_t read_pcs = 0;
    while (s.ok() && calls < 10000) {
      ++calls;
      CUpti_PCSamplingGetDataParams get{};
      get.size = CUpti_PCSamplingGetDataParamsSize;
      get.ctx = armed->ctx;
      get.pcSamplingData = &en.read_buffer->data;
      CUptiResult r = cuptiPCSamplingGetData(&get);
      if (r != CUPTI_SUCCESS) {
        s = service_status(r, "cuptiPCSamplingGetData", kService, dev_);
        break;
      }
      const size_t got = en.read_buffer->data.totalNumPcs;
      read_pcs += got;
      add(en.read_buffer->data, counts);
      // A call that hands out nothing ends it too: should CUPTI not empty the configured buffer,
      // its PCs are read once, after Disable, instead of once per call.
      if (en.read_buffer->data.remainingNumPcs == 0 &&
          (en.config_buffer->data.totalNumPcs == 0 || got == 0))
        break;
    }
    const auto t_read = Clock::now();
    // Kept enabled (the header comment): it stays so, and the context is marked, as PC sampling
    // started since its enable stops the range profiler and PM sampling until it is enabled again
    // (ready_for_profiling). Otherwise Disable writes what the hardware delivered late into the
    // configured buffer, read last.
    std::unique_ptr<Enabled> done;
    size_t late_pcs = 0;
    if (keep_enabled()) {
      std::lock_guard lk(mu_);
      stale_.insert(armed->ctx);
    } else {
      done = std::move(it->second);
      enabled_.erase(it);
      disable(armed->ctx);
      late_pcs = done->config_buffer->data.totalNumPcs;
      add(done->config_buffer->data, counts);
    }
    const Enabled& names = done ? *done : en;
    KR_DEBUG(
        "PC sampling: {} GetData calls read {} PCs, {} more after Disable; {} (function, PC, "
        "reason) with samples; stop: {}; ms: stop {:.1f}, read {:.1f}, disable {:.1f}",
        calls, read_pcs, late_pcs, counts.size(), s.ok() ? "ok" : s.message(),
        ms_between(t_stop0, t_stop1), ms_between(t_stop1, t_read), ms_between(t_read, Clock::now()));
    if (!s.ok()) return s;
    std::vector<device::ServiceSample> out;
    std::vector<uint64_t> crcs;
    for (const auto& [key, n] : counts) {
      const auto& [function, pc, crc, reason] = key;
      device::ServiceSample smp;
      smp.function = function;
      smp.pc_offset = pc;
      smp.name = reason_name(names, reason);
      smp.value = static_cast<double>(n);
      out.push_back(std::move(smp));
      crcs.push_back(crc);
    }
    add_sources(out, crcs, false);
    if (out.empty() && !keep_enabled()) {
      // Enabled for its own passes only (the header comment): say so rather than hand out an
      // empty, plausible-looking pass.
      std::lock_guard lk(mu_);
      empty_next_to_counters_.insert(&launch);
    } else if (out.empty()) {
      KR_WARN_ONCE("pcsamp-empty",
                   "PC sampling collected no sample on a pass: a kernel shorter than one sampling "
                   "period gets none (a smaller --pc-sampling-period samples more often)");
    }
    samples_.put(launch, std::move(out));
    return Status::Ok();
  }

  Result<std::vector<device::ServiceSample>> flush(device::Launch& launch) override {
    auto out = samples_.take(launch);
    std::lock_guard lock(mu_);
    if (empty_next_to_counters_.erase(&launch) != 0) {
      return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                   "PC sampling collected no sample with KREPLAY_PC_SAMPLING_KEEP_ENABLED=0: on "
                   "CUDA a kernel is sampled only if its first launch after profiling began on "
                   "the context ran with PC sampling enabled; unset the variable, or put its pass "
                   "first (--pc-sampling-pass-position 0, kernel replay)");
    }
    return out;
  }

 private:
  // Disable and enable PC sampling again on @p ctx (ctx_mu_ held), unless a pass is collecting
  // there (its context stays marked).
  void refresh(CUcontext ctx) {
    auto it = enabled_.find(ctx);
    if (it == enabled_.end()) return;
    if (started_.count(ctx) != 0) {
      std::lock_guard lk(mu_);
      stale_.insert(ctx);
      return;
    }
    const auto t0 = Clock::now();
    std::unique_ptr<Enabled> old = std::move(it->second);
    enabled_.erase(it);
    disable(ctx);
    const size_t late = old->config_buffer->data.totalNumPcs;  // none seen on the H200
    Status s = enable_on(ctx, old->settings, nullptr);
    KR_DEBUG("PC sampling: enabled again on context {} before the counters or PM sampling ({:.1f} "
             "ms, {} late PCs left unread): {}",
             static_cast<const void*>(ctx), ms_between(t0, Clock::now()), late,
             s.ok() ? "ok" : s.message());
    if (!s.ok()) {
      KR_WARN_ONCE("pcsamp-refresh",
                   "PC sampling could not be enabled again before the counters or PM sampling "
                   "({}); kernels first launched after this may get no sample",
                   s.message());
    }
  }

  // PC sampling enabled and configured with @p settings on @p ctx, not started (ctx_mu_ held). A
  // failed enable next to the counters' range profiler gives it up and tries once more.
  Status enable_on(CUcontext ctx, const device::ServiceSettings& settings, CudaLaunch* cl) {
    if (auto it = enabled_.find(ctx); it != enabled_.end()) {
      if (it->second->period == settings.period) return Status::Ok();
      Status s = configure(ctx, *it->second, settings);  // another period: configure again
      if (s.ok()) return s;
      enabled_.erase(it);
      disable(ctx);
      return s;
    }
    CUpti_PCSamplingEnableParams en{};
    en.size = CUpti_PCSamplingEnableParamsSize;
    en.ctx = ctx;
    CUptiResult r = cuptiPCSamplingEnable(&en);
    KR_DEBUG("PC sampling: enable on context {}: {}", static_cast<const void*>(ctx),
             cupti::result_name(r));
    if (r != CUPTI_SUCCESS && cl != nullptr && yield_counters(dev_, *cl, kService)) {
      r = cuptiPCSamplingEnable(&en);
      KR_DEBUG("PC sampling: enable again after the counters yielded: {}", cupti::result_name(r));
    }
    if (r != CUPTI_SUCCESS) return service_status(r, "cuptiPCSamplingEnable", kService, dev_);
    auto e = std::make_unique<Enabled>();
    auto reasons = cupti::pc_stall_reasons(ctx);
    Status s = reasons.status();
    if (s.ok()) {
      e->reasons = std::move(reasons).value();
      e->config_buffer = std::make_unique<PcBuffer>(e->reasons.size());
      e->read_buffer = std::make_unique<PcBuffer>(e->reasons.size());
      s = configure(ctx, *e, settings);
    }
    if (!s.ok()) {
      disable(ctx);
      return s;
    }
    {
      std::lock_guard lock(mu_);
      if (reasons_seen_.empty()) reasons_seen_ = e->reasons;
      stale_.erase(ctx);  // enabled afresh: modules loaded before do not count
    }
    e->settings = settings;
    enabled_[ctx] = std::move(e);
    return Status::Ok();
  }

  Status configure(CUcontext ctx, Enabled& e, const device::ServiceSettings& settings) {
    std::vector<uint32_t> indices;
    for (const auto& r : e.reasons) indices.push_back(r.index);

    std::vector<CUpti_PCSamplingConfigurationInfo> attrs;
    auto attr = [&](CUpti_PCSamplingConfigurationAttributeType t) -> auto& {
      CUpti_PCSamplingConfigurationInfo info{};
      info.attributeType = t;
      attrs.push_back(info);
      return attrs.back().attributeData;
    };
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE)
        .collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL)
        .enableStartStopControlData.enableStartStopControl = 1;
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT)
        .outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
        .samplingDataBufferData.samplingDataBuffer = &e.config_buffer->data;
    auto& stall = attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON).stallReasonData;
    stall.stallReasonCount = indices.size();
    stall.pStallReasonIndex = indices.data();
    if (settings.period != 0) {
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
          .samplingPeriodData.samplingPeriod = static_cast<uint32_t>(settings.period);
    }
    CUpti_PCSamplingConfigurationInfoParams cfg{};
    cfg.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    cfg.ctx = ctx;
    cfg.numAttributes = attrs.size();
    cfg.pPCSamplingConfigurationInfo = attrs.data();
    if (CUptiResult r = cuptiPCSamplingSetConfigurationAttribute(&cfg); r != CUPTI_SUCCESS) {
      for (const auto& a : attrs) {
        if (a.attributeStatus != CUPTI_SUCCESS) {
          return service_status(
              r,
              fmt::format("cuptiPCSamplingSetConfigurationAttribute (attribute {})",
                          static_cast<int>(a.attributeType))
                  .c_str(),
              kService, dev_);
        }
      }
      return service_status(r, "cuptiPCSamplingSetConfigurationAttribute", kService, dev_);
    }
    e.period = settings.period;
    return Status::Ok();
  }

  static void disable(CUcontext ctx) {
    CUpti_PCSamplingDisableParams dis{};
    dis.size = CUpti_PCSamplingDisableParamsSize;
    dis.ctx = ctx;
    CUptiResult r = cuptiPCSamplingDisable(&dis);
    KR_DEBUG("PC sampling: disable on context {}: {}", static_cast<const void*>(ctx),
             cupti::result_name(r));
    if (r != CUPTI_SUCCESS)
      KR_WARN_ONCE("pcsamp-disable", "cuptiPCSamplingDisable failed: {}", cupti::result_name(r));
  }

  // Function names belong to CUPTI and may be shared with later records (cupti_pcsampling.h), so
  // they are copied and never freed here.
  static void add(CUpti_PCSamplingData& d, std::map<Key, uint64_t>& counts) {
    for (size_t i = 0; i < d.totalNumPcs && i < d.collectNumPcs; ++i) {
      const CUpti_PCSamplingPCData& pc = d.pPcData[i];
      std::string function = pc.functionName ? pc.functionName : "";
      for (size_t k = 0; k < pc.stallReasonCount; ++k) {
        const auto& sr = pc.stallReason[k];
        if (sr.samples == 0) continue;
        counts[{function, pc.pcOffset, pc.cubinCrc, sr.pcSamplingStallReasonIndex}] += sr.samples;
      }
    }
    const uint64_t dropped = d.droppedSamples;  // packed struct: copy before formatting
    const bool full = d.hardwareBufferFull != 0;
    if (dropped > 0 || full) {
      KR_WARN_ONCE("pcsamp-dropped",
                   "PC sampling dropped {} samples (hardware buffer full: {}); use a longer "
                   "--pc-sampling-period",
                   dropped, full ? "yes" : "no");
    }
    d.totalNumPcs = 0;
  }

  static std::string reason_name(const Enabled& e, uint32_t index) {
    for (const auto& r : e.reasons) {
      if (r.index == index) return r.name;
    }
    return fmt::format("stall_reason_{}", index);
  }

  // Whether PC sampling stays enabled on its contexts (the header comment).
  // KREPLAY_PC_SAMPLING_KEEP_ENABLED=0 enables it for its own passes only.
  static bool keep_enabled() {
    static const bool keep = env::get_bool("KREPLAY_PC_SAMPLING_KEEP_ENABLED", true);
    return keep;
  }

  CudaDevice* dev_;
  std::unordered_set<const device::Launch*> empty_next_to_counters_;  // guarded by mu_
  std::mutex ctx_mu_;  // enabled_, and every CUPTI PC-sampling call made under it
  std::map<CUcontext, std::unique_ptr<Enabled>> enabled_;
  std::map<CUcontext, int> started_;  // passes between Start and Stop, per context (ctx_mu_)
  mutable std::mutex mu_;  // reasons_seen_, empty_next_to_counters_, stale_
  std::set<CUcontext> stale_;  // a module was loaded there since PC sampling was enabled
  ArmedPasses<Armed> armed_;
  std::vector<cupti::StallReason> reasons_seen_;
  PassSamples samples_;
};

}  // namespace

void pc_sampling_context_created(CudaDevice* dev, CUcontext ctx) {
  const device::ServiceSettings* settings = configured_settings(KREPLAY_PASS_SERVICE_PC_SAMPLING);
  if (dev == nullptr || settings == nullptr) return;
  if (auto* pc = dynamic_cast<CudaPcSampling*>(dev->service(KREPLAY_PASS_SERVICE_PC_SAMPLING)))
    pc->context_created(ctx, *settings);
}

namespace {
CudaPcSampling* configured_pc_sampling(CudaDevice* dev) {
  if (dev == nullptr || configured_settings(KREPLAY_PASS_SERVICE_PC_SAMPLING) == nullptr)
    return nullptr;
  return dynamic_cast<CudaPcSampling*>(dev->service(KREPLAY_PASS_SERVICE_PC_SAMPLING));
}
}  // namespace

void pc_sampling_module_loaded(CudaDevice* dev, CUcontext ctx) {
  if (auto* pc = configured_pc_sampling(dev)) pc->module_loaded(ctx);
}

void pc_sampling_ready_for_profiling(CudaDevice* dev, CUcontext ctx) {
  if (auto* pc = configured_pc_sampling(dev)) pc->ready_for_profiling(ctx);
}

std::unique_ptr<device::PassService> make_pc_sampling(CudaDevice* dev) {
  return std::make_unique<CudaPcSampling>(dev);
}

}  // namespace kreplay::cuda::services
