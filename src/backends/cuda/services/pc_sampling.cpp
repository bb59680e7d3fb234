// PC sampling on CUDA (cupti_pcsampling.h): warp-state samples per PC with their stall reasons,
// what ncu's WarpStateStats section and source page show.
//
// Kernel-serialized collection mode with start/stop control, on the launch's context, strictly
// inside the pass (cupti_service.hpp): begin_pass enables PC sampling, sets the attributes and
// starts; end_pass stops, reads every PC with cuptiPCSamplingGetData until none remains, disables
// (which may write what was still pending into the buffer given as SAMPLING_DATA_BUFFER, read
// last) and keeps the samples for flush. Enabling per pass costs more than enabling once per
// context, but nothing of PC sampling (serialized kernels, the sampling hardware) is on during the
// other passes of the launch, counter passes included.
//
// One sample per (function, PC, stall reason) with the number of samples. CUPTI gives no
// instruction text (left empty; a later step may disassemble the cubin with nvdisasm); the source
// line comes from the module's cubin when kreplay kept it (cupti_service.hpp: source_line).
//
// Enable inside the launch callback (where the engine calls begin_pass) works on the H200: alone,
// a hot loop's kernel gets ~240,000 samples. After a counter pass of the same replay window it
// gets none, with every call succeeding (H200, CUDA 13.0, driver 580; bench/RESULTS.md, tenth
// session): on the pass after the counters in kernel replay, after a timing and a counter pass,
// on a range's passes after its counted first pass, and with CUPTI's profiler API as with the
// range profiler; also with the profiler disabled (make_room), cuptiProfilerDeInitialize'd, the
// context synchronized, or PC sampling enabled and disabled once more first. Before the counters
// (--pc-sampling-pass-position 0: the application's own submission, after the previous
// window's counters) it samples as much as alone. bench/cuda/pc_sampling_probe.cpp, without
// kreplay, samples normally after whole collections once the profiler is disabled, also with the
// collection and the relaunch inside one launch callback; it gets nothing only while the profiler
// is still enabled. What kreplay's window holds on to is not found yet; end_pass says so rather
// than hand out an empty pass.
#include <cupti_pcsampling.h>
#include <fmt/format.h>

#include <map>
#include <tuple>
#include <unordered_set>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_counters.hpp"
#include "backends/cuda/cupti/cupti_common.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"
#include "backends/cuda/cupti/service_catalog.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/services/cupti_service.hpp"
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

struct Armed {
  CUcontext ctx = nullptr;
  std::vector<cupti::StallReason> reasons;
  std::unique_ptr<PcBuffer> config_buffer;  // SAMPLING_DATA_BUFFER: what Disable writes
  std::unique_ptr<PcBuffer> read_buffer;    // cuptiPCSamplingGetData's
};

using Key = std::tuple<std::string, uint64_t, uint64_t, uint32_t>;  // function, pc, crc, reason

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

  Status begin_pass(device::Launch& launch, const device::ServiceSettings& settings) override {
    ASSIGN_OR_RETURN(CudaLaunch * cl, cuda_launch(launch));
    if (cl->capturing) return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "stream is being captured");
    ASSIGN_OR_RETURN(CUcontext ctx, current_context());
    InternalScope internal;
    RETURN_IF_ERROR(make_room(dev_, *cl, kService));
    auto armed = std::make_unique<Armed>();
    armed->ctx = ctx;
    CUpti_PCSamplingEnableParams en{};
    en.size = CUpti_PCSamplingEnableParamsSize;
    en.ctx = ctx;
    CUptiResult r = cuptiPCSamplingEnable(&en);
    if (r != CUPTI_SUCCESS && yield_counters(dev_, *cl, kService)) r = cuptiPCSamplingEnable(&en);
    if (r != CUPTI_SUCCESS) return service_status(r, "cuptiPCSamplingEnable", kService, dev_);
    Status s = configure_and_start(*armed, settings);
    if (!s.ok()) {
      disable(ctx);
      return s;
    }
    {
      std::lock_guard lock(mu_);
      if (reasons_seen_.empty()) reasons_seen_ = armed->reasons;
    }
    armed_.put(launch, std::move(armed));
    return Status::Ok();
  }

  Status end_pass(device::Launch& launch) override {
    std::unique_ptr<Armed> armed = armed_.take(launch);
    if (!armed) return Status::Ok();
    InternalScope internal;
    std::map<Key, uint64_t> counts;
    CUpti_PCSamplingStopParams stop{};
    stop.size = CUpti_PCSamplingStopParamsSize;
    stop.ctx = armed->ctx;
    Status s = service_status(cuptiPCSamplingStop(&stop), "cuptiPCSamplingStop", kService, dev_);
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
      get.pcSamplingData = &armed->read_buffer->data;
      CUptiResult r = cuptiPCSamplingGetData(&get);
      if (r != CUPTI_SUCCESS) {
        s = service_status(r, "cuptiPCSamplingGetData", kService, dev_);
        break;
      }
      const size_t got = armed->read_buffer->data.totalNumPcs;
      read_pcs += got;
      add(armed->read_buffer->data, counts);
      // A call that hands out nothing ends it too: should CUPTI not empty the configured buffer,
      // its PCs are read once, after Disable, instead of once per call.
      if (armed->read_buffer->data.remainingNumPcs == 0 &&
          (armed->config_buffer->data.totalNumPcs == 0 || got == 0))
        break;
    }
    disable(armed->ctx);
    const size_t late_pcs = armed->config_buffer->data.totalNumPcs;
    // What the hardware delivered late: Disable writes it into the configured buffer.
    add(armed->config_buffer->data, counts);
    KR_DEBUG(
        "PC sampling: {} GetData calls read {} PCs, {} more after Disable; {} (function, PC, "
        "reason) with samples; stop: {}",
        calls, read_pcs, late_pcs, counts.size(), s.ok() ? "ok" : s.message());
    if (!s.ok()) return s;
    std::vector<device::ServiceSample> out;
    std::vector<uint64_t> crcs;
    for (const auto& [key, n] : counts) {
      const auto& [function, pc, crc, reason] = key;
      device::ServiceSample smp;
      smp.function = function;
      smp.pc_offset = pc;
      smp.name = reason_name(*armed, reason);
      smp.value = static_cast<double>(n);
      out.push_back(std::move(smp));
      crcs.push_back(crc);
    }
    add_sources(out, crcs, false);
    if (out.empty() && counters_profiled()) {
      // The H200 case of the header comment: nothing after counter passes. Say so rather than
      // hand out an empty, plausible-looking pass. (Whether counters ran earlier in this window
      // is not known here, so a pass ahead of them on a kernel too short for one sample says
      // so too; the message is worded for both.)
      std::lock_guard lock(mu_);
      empty_next_to_counters_.insert(&launch);
    }
    samples_.put(launch, std::move(out));
    return Status::Ok();
  }

  Result<std::vector<device::ServiceSample>> flush(device::Launch& launch) override {
    auto out = samples_.take(launch);
    std::lock_guard lock(mu_);
    if (empty_next_to_counters_.erase(&launch) != 0) {
      return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                   "PC sampling collected no sample, in a run with counters: on CUDA it collects "
                   "nothing on a pass after counter passes (so far); put its pass first "
                   "(--pc-sampling-pass-position 0, kernel replay) or collect --pc-sampling in a "
                   "run without counters");
    }
    return out;
  }

 private:
  Status configure_and_start(Armed& armed, const device::ServiceSettings& settings) {
    ASSIGN_OR_RETURN(armed.reasons, cupti::pc_stall_reasons(armed.ctx));
    armed.config_buffer = std::make_unique<PcBuffer>(armed.reasons.size());
    armed.read_buffer = std::make_unique<PcBuffer>(armed.reasons.size());
    std::vector<uint32_t> indices;
    for (const auto& r : armed.reasons) indices.push_back(r.index);

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
        .samplingDataBufferData.samplingDataBuffer = &armed.config_buffer->data;
    auto& stall = attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON).stallReasonData;
    stall.stallReasonCount = indices.size();
    stall.pStallReasonIndex = indices.data();
    if (settings.period != 0) {
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
          .samplingPeriodData.samplingPeriod = static_cast<uint32_t>(settings.period);
    }
    CUpti_PCSamplingConfigurationInfoParams cfg{};
    cfg.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    cfg.ctx = armed.ctx;
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
    CUpti_PCSamplingStartParams start{};
    start.size = CUpti_PCSamplingStartParamsSize;
    start.ctx = armed.ctx;
    return service_status(cuptiPCSamplingStart(&start), "cuptiPCSamplingStart", kService, dev_);
  }

  static void disable(CUcontext ctx) {
    CUpti_PCSamplingDisableParams dis{};
    dis.size = CUpti_PCSamplingDisableParamsSize;
    dis.ctx = ctx;
    if (CUptiResult r = cuptiPCSamplingDisable(&dis); r != CUPTI_SUCCESS)
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

  static std::string reason_name(const Armed& armed, uint32_t index) {
    for (const auto& r : armed.reasons) {
      if (r.index == index) return r.name;
    }
    return fmt::format("stall_reason_{}", index);
  }

  CudaDevice* dev_;
  // Whether the counters have used CUPTI's range profiler in this process (given up for this
  // pass by make_room or not).
  bool counters_profiled() const {
    auto* counters = dynamic_cast<CudaCounterBackend*>(dev_->counters());
    return counters != nullptr && counters->used();
  }

  std::unordered_set<const device::Launch*> empty_next_to_counters_;  // guarded by mu_
  mutable std::mutex mu_;
  ArmedPasses<Armed> armed_;
  std::vector<cupti::StallReason> reasons_seen_;
  PassSamples samples_;
};

}  // namespace

std::unique_ptr<device::PassService> make_pc_sampling(CudaDevice* dev) {
  return std::make_unique<CudaPcSampling>(dev);
}

}  // namespace kreplay::cuda::services
