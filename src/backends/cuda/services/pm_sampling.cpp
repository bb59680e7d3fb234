// PM sampling on CUDA (cupti_pmsampling.h, CUDA 12.6+): hardware counters sampled every
// `period` ns while the kernel runs, with timestamps: what ncu's PmSampling section shows, the
// analogue of AMD's SPM.
//
// The config is one single-pass image of the requested metrics, built with CUPTI's profiler host
// API as the counters' (cupti/profiler_host.cpp) but for CUPTI_PROFILER_TYPE_PM_SAMPLING and with
// the device's PM-sampling counter availability; a metric set that needs more than one pass is
// refused at configure (CUPTI: single-pass configs only). Metric names are the same base metrics
// the range profiler lists (--list-avail), with their rollup suffixes.
//
// Strictly inside the pass (cupti_service.hpp): begin_pass enables a PM sampling object on the
// device, sets the config (trigger GPU_TIME_INTERVAL) and starts; end_pass stops, decodes the
// hardware buffer into counter-data images (a full image is evaluated and decoded into again),
// evaluates each completed sample and disables. Decoding happens after the kernel, not
// concurrently: the hardware buffer (256 MiB) holds millions of samples at the default interval;
// an overflow is reported once.
//
// Times: time_ns of a sample is the end of its interval, from the start of the first sample,
// which begins when sampling starts, just before the submission.
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <fmt/format.h>

#include <map>
#include <mutex>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_counters.hpp"
#include "backends/cuda/cupti/cupti_common.hpp"
#include "backends/cuda/cupti/profiler_host.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/services/cupti_service.hpp"
#include "common/logging.hpp"

namespace kreplay::cuda::services {
namespace {

constexpr const char* kService = "PM sampling";
constexpr uint64_t kDefaultIntervalNs = 20000;
constexpr uint64_t kMinIntervalNs = 1000;
constexpr size_t kHardwareBufferBytes = size_t{256} << 20;
constexpr uint32_t kSamplesPerImage = 4096;

/// One metric set's config image and the host object that built it (it evaluates the data).
struct PmConfig {
  std::vector<std::string> metrics;
  std::vector<const char*> names;  // into metrics
  std::vector<uint8_t> image;
  CUpti_Profiler_Host_Object* host = nullptr;
};

struct Armed {
  CUpti_PmSampling_Object* object = nullptr;
  const PmConfig* config = nullptr;
};

class CudaPmSampling final : public device::PassService {
 public:
  explicit CudaPmSampling(CudaDevice* dev) : dev_(dev) {}
  ~CudaPmSampling() override {
    // Host objects are left to the process's end: CUPTI may be torn down before this runs.
  }

  kreplay_pass_service_kind_t kind() const override { return KREPLAY_PASS_SERVICE_PM_SAMPLING; }

  std::vector<device::ServiceMetric> metrics() const override {
    std::vector<device::ServiceMetric> out;
    auto host = cupti::ProfilerHost::shared(chip());
    if (!host.ok()) return out;
    auto list = (*host)->list_metrics();
    if (!list.ok()) return out;
    for (const auto& m : *list) out.push_back({m.name, m.description, false});
    return out;
  }

  Status configure(device::ServiceSettings& settings) const override {
    if (settings.metrics.empty()) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   "PM sampling needs at least one metric (list them with --list-avail)");
    }
    if (settings.period == 0) settings.period = kDefaultIntervalNs;
    if (settings.period < kMinIntervalNs) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT,
                   fmt::format("PM sampling interval {} ns is too short; use at least {} ns",
                               settings.period, kMinIntervalNs));
    }
    ASSIGN_OR_RETURN(auto host, cupti::ProfilerHost::shared(chip()));
    RETURN_IF_ERROR(host->validate(settings.metrics));
    // Single pass or nothing: checked now when the device answers, else at the first pass.
    auto cfg = const_cast<CudaPmSampling*>(this)->config_for(settings.metrics);
    if (!cfg.ok() && cfg.status().code() == KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT)
      return cfg.status();
    return Status::Ok();
  }

  Status begin_pass(device::Launch& launch, const device::ServiceSettings& settings) override {
    ASSIGN_OR_RETURN(CudaLaunch * cl, cuda_launch(launch));
    if (cl->capturing) return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "stream is being captured");
    ASSIGN_OR_RETURN(const PmConfig* cfg, config_for(settings.metrics));
    InternalScope internal;
    // PM sampling is the device's: PC sampling started on any of its contexts stops it.
    dev_->ready_for_profiling(nullptr);
    RETURN_IF_ERROR(make_room(dev_, *cl, kService));
    auto en = KR_CUPTI_PARAMS(CUpti_PmSampling_Enable_Params);
    en.deviceIndex = dev_->desc().device_index;
    CUptiResult r = cuptiPmSamplingEnable(&en);
    if (r != CUPTI_SUCCESS && yield_counters(dev_, *cl, kService)) r = cuptiPmSamplingEnable(&en);
    if (r != CUPTI_SUCCESS) return service_status(r, "cuptiPmSamplingEnable", kService, dev_);
    auto armed = std::make_unique<Armed>();
    armed->object = en.pPmSamplingObject;
    armed->config = cfg;
    auto set = KR_CUPTI_PARAMS(CUpti_PmSampling_SetConfig_Params);
    set.pPmSamplingObject = armed->object;
    set.configSize = cfg->image.size();
    set.pConfig = cfg->image.data();
    set.hardwareBufferSize = kHardwareBufferBytes;
    set.samplingInterval = settings.period != 0 ? settings.period : kDefaultIntervalNs;
    set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    set.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    Status s =
        service_status(cuptiPmSamplingSetConfig(&set), "cuptiPmSamplingSetConfig", kService, dev_);
    if (s.ok()) {
      auto start = KR_CUPTI_PARAMS(CUpti_PmSampling_Start_Params);
      start.pPmSamplingObject = armed->object;
      s = service_status(cuptiPmSamplingStart(&start), "cuptiPmSamplingStart", kService, dev_);
    }
    if (!s.ok()) {
      disable(armed->object);
      return s;
    }
    armed_.put(launch, std::move(armed));
    return Status::Ok();
  }

  Status end_pass(device::Launch& launch) override {
    std::unique_ptr<Armed> armed = armed_.take(launch);
    if (!armed) return Status::Ok();
    InternalScope internal;
    auto stop = KR_CUPTI_PARAMS(CUpti_PmSampling_Stop_Params);
    stop.pPmSamplingObject = armed->object;
    Status s = service_status(cuptiPmSamplingStop(&stop), "cuptiPmSamplingStop", kService, dev_);
    std::vector<device::ServiceSample> out;
    if (s.ok()) s = decode(*armed, out);
    for (auto& smp : out) smp.function = launch.info().mangled_name;
    disable(armed->object);
    if (!s.ok()) return s;
    samples_.put(launch, std::move(out));
    return Status::Ok();
  }

  Result<std::vector<device::ServiceSample>> flush(device::Launch& launch) override {
    return samples_.take(launch);
  }

 private:
  std::string chip() const {
    auto* counters = dynamic_cast<CudaCounterBackend*>(dev_->counters());
    return counters ? counters->chip() : dev_->desc().chip;
  }

  static void disable(CUpti_PmSampling_Object* object) {
    auto dis = KR_CUPTI_PARAMS(CUpti_PmSampling_Disable_Params);
    dis.pPmSamplingObject = object;
    if (CUptiResult r = cuptiPmSamplingDisable(&dis); r != CUPTI_SUCCESS)
      KR_WARN_ONCE("pmsamp-disable", "cuptiPmSamplingDisable failed: {}", cupti::result_name(r));
  }

  // The device's PM-sampling counter availability (hides what this device cannot sample).
  Result<std::vector<uint8_t>> availability() {
    auto init = KR_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerInitialize(&init));
    auto p = KR_CUPTI_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params);
    p.deviceIndex = dev_->desc().device_index;
    KR_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingGetCounterAvailability(&p));
    std::vector<uint8_t> image(p.counterAvailabilityImageSize);
    p.pCounterAvailabilityImage = image.data();
    KR_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingGetCounterAvailability(&p));
    return image;
  }

  // Built once per metric list; EXCEEDS_HW_LIMIT when the list needs more than one pass.
  Result<const PmConfig*> config_for(const std::vector<std::string>& metrics) {
    std::lock_guard lock(config_mu_);
    std::string key = fmt::format("{}", fmt::join(metrics, "\n"));
    if (auto it = configs_.find(key); it != configs_.end()) return it->second.get();
    InternalScope internal;
    ASSIGN_OR_RETURN(std::vector<uint8_t> avail, availability());
    auto cfg = std::make_unique<PmConfig>();
    cfg->metrics = metrics;
    for (const auto& m : cfg->metrics) cfg->names.push_back(m.c_str());
    const std::string chip_name = chip();
    std::lock_guard api(cupti::host_api_mutex());
    auto init = KR_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
    init.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
    init.pChipName = chip_name.c_str();
    init.pCounterAvailabilityImage = avail.data();
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostInitialize(&init));
    cfg->host = init.pHostObject;
    size_t passes = 0;
    Status built = [&]() -> Status {
      auto add = KR_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
      add.pHostObject = cfg->host;
      add.ppMetricNames = cfg->names.data();
      add.numMetrics = cfg->names.size();
      KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostConfigAddMetrics(&add));
      auto size = KR_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
      size.pHostObject = cfg->host;
      KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetConfigImageSize(&size));
      cfg->image.resize(size.configImageSize);
      auto image = KR_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
      image.pHostObject = cfg->host;
      image.configImageSize = cfg->image.size();
      image.pConfigImage = cfg->image.data();
      KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetConfigImage(&image));
      auto np = KR_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
      np.configImageSize = cfg->image.size();
      np.pConfigImage = cfg->image.data();
      KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostGetNumOfPasses(&np));
      passes = np.numOfPasses;
      return Status::Ok();
    }();
    if (built.ok() && passes != 1) {
      built = Error(KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT,
                    fmt::format("PM sampling takes single-pass metric sets only and {} need {} "
                                "passes; sample fewer metrics per run",
                                fmt::join(metrics, ","), passes));
    }
    if (!built.ok()) {
      auto de = KR_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
      de.pHostObject = cfg->host;
      (void)cuptiProfilerHostDeinitialize(&de);
      return built;
    }
    auto [it, inserted] = configs_.emplace(std::move(key), std::move(cfg));
    return it->second.get();
  }

  // Decode the hardware buffer into images until it is empty, evaluating every completed sample.
  Status decode(const Armed& armed, std::vector<device::ServiceSample>& out) {
    const PmConfig& cfg = *armed.config;
    auto size = KR_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataSize_Params);
    size.pPmSamplingObject = armed.object;
    size.pMetricNames = const_cast<const char**>(cfg.names.data());
    size.numMetrics = cfg.names.size();
    size.maxSamples = kSamplesPerImage;
    KR_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingGetCounterDataSize(&size));
    std::vector<uint8_t> image(size.counterDataSize);
    uint64_t origin = 0;
    for (int round = 0; round < 4096; ++round) {
      auto ini = KR_CUPTI_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
      ini.pPmSamplingObject = armed.object;
      ini.counterDataSize = image.size();
      ini.pCounterData = image.data();
      KR_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingCounterDataImageInitialize(&ini));
      auto dec = KR_CUPTI_PARAMS(CUpti_PmSampling_DecodeData_Params);
      dec.pPmSamplingObject = armed.object;
      dec.pCounterDataImage = image.data();
      dec.counterDataImageSize = image.size();
      KR_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingDecodeData(&dec));
      if (dec.overflow) {
        KR_WARN_ONCE("pmsamp-overflow",
                     "PM sampling: the hardware buffer overflowed; later samples of the pass are "
                     "lost (use a longer --pm-sampling-interval)");
      }
      auto info = KR_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
      info.pCounterDataImage = image.data();
      info.counterDataImageSize = image.size();
      KR_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingGetCounterDataInfo(&info));
      for (size_t i = 0; i < info.numCompletedSamples; ++i) {
        auto si = KR_CUPTI_PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params);
        si.pPmSamplingObject = armed.object;
        si.pCounterDataImage = image.data();
        si.counterDataImageSize = image.size();
        si.sampleIndex = i;
        KR_CUPTI_RETURN_IF_ERROR(cuptiPmSamplingCounterDataGetSampleInfo(&si));
        if (origin == 0) origin = si.startTimestamp;
        std::vector<double> values(cfg.names.size(), 0.0);
        {
          std::lock_guard api(cupti::host_api_mutex());
          auto ev = KR_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
          ev.pHostObject = cfg.host;
          ev.pCounterDataImage = image.data();
          ev.counterDataImageSize = image.size();
          ev.rangeIndex = i;
          ev.ppMetricNames = const_cast<const char**>(cfg.names.data());
          ev.numMetrics = cfg.names.size();
          ev.pMetricValues = values.data();
          KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerHostEvaluateToGpuValues(&ev));
        }
        for (size_t m = 0; m < cfg.metrics.size(); ++m) {
          device::ServiceSample s;
          s.name = cfg.metrics[m];
          s.time_ns = si.endTimestamp > origin ? si.endTimestamp - origin : 0;
          s.value = values[m];
          out.push_back(std::move(s));
        }
      }
      if (dec.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) break;
    }
    return Status::Ok();
  }

  CudaDevice* dev_;
  std::mutex config_mu_;
  std::map<std::string, std::unique_ptr<PmConfig>> configs_;
  ArmedPasses<Armed> armed_;
  PassSamples samples_;
};

}  // namespace

std::unique_ptr<device::PassService> make_pm_sampling(CudaDevice* dev) {
  return std::make_unique<CudaPmSampling>(dev);
}

}  // namespace kreplay::cuda::services
