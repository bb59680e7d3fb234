#include "backends/cuda/cupti/range_profiler.hpp"

#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <fmt/format.h>

#include <chrono>
#include <map>
#include <mutex>
#include <utility>

#include "backends/cuda/cupti/cupti_common.hpp"
#include "backends/cuda/cupti/driver_api.hpp"
#include "common/logging.hpp"

namespace kreplay::cupti {
namespace {

const char* level_name(CUpti_Profiler_Support_Level level) {
  switch (level) {
    case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED:
      return "unsupported";
    case CUPTI_PROFILER_CONFIGURATION_DISABLED:
      return "disabled";
    case CUPTI_PROFILER_CONFIGURATION_SUPPORTED:
      return "supported";
    default:
      return "unknown";
  }
}

/// The ProfilerHost of each device (chip + that device's counter availability), shared by every
/// context on the device so that each metric set's config image is built once per device.
class DeviceHosts {
 public:
  static DeviceHosts& instance() {
    // Process lifetime, never destroyed: no CUPTI calls from static destructors at exit.
    static DeviceHosts* hosts = new DeviceHosts;
    return *hosts;
  }
  std::shared_ptr<ProfilerHost> find(CUdevice device) {
    std::lock_guard lock(mu_);
    auto it = hosts_.find(device);
    return it == hosts_.end() ? nullptr : it->second;
  }
  std::shared_ptr<ProfilerHost> add(CUdevice device, std::unique_ptr<ProfilerHost> host) {
    std::lock_guard lock(mu_);
    auto [it, inserted] = hosts_.emplace(device, std::move(host));
    return it->second;  // a concurrent create() may have won: use its host
  }

 private:
  std::mutex mu_;
  std::map<CUdevice, std::shared_ptr<ProfilerHost>> hosts_;
};

Result<std::vector<uint8_t>> read_counter_availability(CUcontext ctx) {
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
  params.ctx = ctx;
  KR_DEBUG("range profiler: reading the counter availability on context {}",
           static_cast<const void*>(ctx));
  KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerGetCounterAvailability(&params));
  std::vector<uint8_t> image(params.counterAvailabilityImageSize);
  params.pCounterAvailabilityImage = image.data();
  KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerGetCounterAvailability(&params));
  image.resize(params.counterAvailabilityImageSize);
  return image;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Device checks and creation
// ------------------------------------------------------------------------------------------

Status RangeProfiler::device_supported(CUdevice device) {
  RETURN_IF_ERROR(driver::init());
  RETURN_IF_ERROR(profiler_initialize());
  auto params = KR_CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params);
  params.cuDevice = device;
  params.api = CUPTI_PROFILER_RANGE_PROFILING;
  KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerDeviceSupported(&params));
  if (params.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return Status::Ok();

  std::vector<std::string> reasons;
  auto check = [&](CUpti_Profiler_Support_Level level, const char* unsupported,
                   const char* disabled) {
    if (level == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED) reasons.emplace_back(unsupported);
    if (level == CUPTI_PROFILER_CONFIGURATION_DISABLED) reasons.emplace_back(disabled);
  };
  check(params.architecture,
        "the GPU architecture has no CUPTI range profiler (Turing or newer is needed)",
        "profiling is disabled for this GPU architecture");
  check(params.sli, "counters are not supported while SLI is enabled",
        "counters are disabled while SLI is enabled");
  check(params.vGpu, "counters are not supported on this vGPU",
        "vGPU profiling is disabled: the hypervisor must enable profiling for this VM");
  check(params.confidentialCompute,
        "counters are not available while confidential computing is enabled",
        "counters are disabled by confidential computing");
  check(params.cmp, "NVIDIA CMP (crypto mining processor) devices do not support profiling",
        "profiling is disabled on this CMP device");
  check(params.wsl, "counters are not supported under WSL with this driver",
        "profiling is disabled under WSL");
  std::string name = "device";
  if (auto n = driver::device_name(device); n.ok()) name = *n;
  std::string message = fmt::format("{} {} cannot be profiled ({})", name, static_cast<int>(device),
                                    level_name(params.isSupported));
  for (const auto& r : reasons) message += ": " + r;
  if (reasons.empty()) {
    message +=
        ": CUPTI gives no reason; check permissions (run as root or set "
        "NVreg_RestrictProfilingToAdminUsers=0) and that no other profiler is attached";
  }
  return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, std::move(message));
}

RangeProfiler::RangeProfiler(CUcontext ctx, CUdevice device, std::string chip,
                             std::shared_ptr<ProfilerHost> host)
    : ctx_(ctx), device_(device), chip_(std::move(chip)), host_(std::move(host)) {}

Result<ContextDevice> context_device_host(CUcontext ctx, CallCost& availability_cost) {
  if (ctx == nullptr) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "no CUDA context");
  RETURN_IF_ERROR(driver::init());
  RETURN_IF_ERROR(profiler_initialize());
  ContextDevice out;
  ASSIGN_OR_RETURN(out.device, driver::context_device(ctx));

  // cuptiDeviceGetChipName takes the device ordinal; a CUdevice is that ordinal.
  auto chip_params = KR_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  chip_params.deviceIndex = static_cast<size_t>(out.device);
  KR_CUPTI_RETURN_IF_ERROR(cuptiDeviceGetChipName(&chip_params));
  out.chip = chip_params.pChipName ? chip_params.pChipName : "";

  out.host = DeviceHosts::instance().find(out.device);
  if (out.host == nullptr) {
    // Read before Enable: the call fails while a profiling session is active on the device.
    Result<std::vector<uint8_t>> availability = [&] {
      TimedCall timed(availability_cost);
      return read_counter_availability(ctx);
    }();
    if (!availability.ok()) return availability.status();
    ASSIGN_OR_RETURN(std::unique_ptr<ProfilerHost> created,
                     ProfilerHost::create(out.chip, *availability));
    KR_DEBUG("CUPTI host for device {} ({}): counter availability {} bytes, init {:.2f} ms",
             static_cast<int>(out.device), out.chip, availability->size(), created->init_ms());
    out.host = DeviceHosts::instance().add(out.device, std::move(created));
  }
  return out;
}

Result<std::unique_ptr<RangeProfiler>> RangeProfiler::create(CUcontext ctx) {
  RangeProfilerCosts costs;
  ASSIGN_OR_RETURN(ContextDevice cd, context_device_host(ctx, costs.counter_availability));
  std::unique_ptr<RangeProfiler> profiler(
      new RangeProfiler(ctx, cd.device, std::move(cd.chip), std::move(cd.host)));
  profiler->costs_ = costs;
  RETURN_IF_ERROR(profiler->enable());
  return profiler;
}

RangeProfiler::~RangeProfiler() {
  Status s = disable();
  if (!s.ok()) KR_WARN("{}", s.message());
}

Status RangeProfiler::enable() {
  auto params = KR_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
  params.ctx = ctx_;
  {
    TimedCall timed(costs_.enable);
    KR_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerEnable(&params));
  }
  KR_DEBUG("range profiler: enabled on context {}", static_cast<const void*>(ctx_));
  object_ = params.pRangeProfilerObject;
  config_used_ = false;
  return Status::Ok();
}

Status RangeProfiler::disable() {
  if (object_ == nullptr) return Status::Ok();
  auto params = KR_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params);
  params.pRangeProfilerObject = object_;
  object_ = nullptr;
  config_used_ = false;
  in_pass_ = false;
  TimedCall timed(costs_.disable);
  KR_DEBUG("range profiler: disabling on context {}", static_cast<const void*>(ctx_));
  KR_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerDisable(&params));
  return Status::Ok();
}

std::span<const uint8_t> RangeProfiler::counter_availability() const {
  return host_->counter_availability();
}

// ------------------------------------------------------------------------------------------
// Configuration
// ------------------------------------------------------------------------------------------

Status RangeProfiler::configure(const std::vector<std::string>& metrics, RangeMode mode,
                                size_t max_ranges) {
  if (max_ranges == 0) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "max_ranges must be at least 1");
  }
  if (max_ranges > UINT32_MAX) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "max_ranges is too large");
  }
  if (in_pass_) {
    return Error(KREPLAY_STATUS_ERROR, "configure() inside a pass (between start() and stop())");
  }
  Result<ConfigImage> config = [&] {
    TimedCall timed(costs_.host_config);
    return host_->build_config(metrics);
  }();
  if (!config.ok()) return config.status();

  bool same_set = config_.metrics == config->metrics && !config_.image.empty();
  if (config_used_ && (!same_set || mode != mode_)) {
    // A second config image on this object would decode to NaN, and a SetConfig in another range
    // mode crashes in NVPW_CUDA_Profiler_BeginPass at the next Start (seen on the H200 with CUDA
    // 13.0: a kernel counted after a graph launch, auto range after user range): start over with
    // a new object.
    KR_DEBUG("range profiler on device {}: metric set or range mode changed, re-enabling",
             static_cast<int>(device_));
    RETURN_IF_ERROR(reenable());
  }
  if (object_ == nullptr) RETURN_IF_ERROR(enable());

  if (!same_set || max_ranges != max_ranges_ || counter_data_.empty()) {
    RETURN_IF_ERROR(size_counter_data(config->metrics, max_ranges));
  }
  config_ = std::move(config).value();
  mode_ = mode;
  max_ranges_ = max_ranges;
  decoded_ = false;
  all_submitted_ = false;
  passes_done_ = 0;
  return Status::Ok();
}

Status RangeProfiler::reenable() {
  ++costs_.reenables;
  RETURN_IF_ERROR(disable());
  RETURN_IF_ERROR(enable());
  // The counter-data image belongs to the object it was sized for: a new object gets a new image
  // (reusing the old one crashed in CounterDataImageInitialize on the H200; in range replay, where
  // the image size differs between the two modes, the switch worked).
  counter_data_.clear();
  return Status::Ok();
}

Status RangeProfiler::size_counter_data(const std::vector<std::string>& metrics,
                                        size_t max_ranges) {
  std::vector<const char*> names;
  names.reserve(metrics.size());
  for (const auto& m : metrics) names.push_back(m.c_str());
  auto size = KR_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
  size.pRangeProfilerObject = object_;
  size.pMetricNames = names.data();
  size.numMetrics = names.size();
  size.maxNumOfRanges = max_ranges;
  size.maxNumRangeTreeNodes = static_cast<uint32_t>(max_ranges);
  {
    TimedCall timed(costs_.counter_data_size);
    KR_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerGetCounterDataSize(&size));
  }
  counter_data_.assign(size.counterDataSize, 0);
  return Status::Ok();
}

// ------------------------------------------------------------------------------------------
// Collection
// ------------------------------------------------------------------------------------------

Status RangeProfiler::begin() {
  if (config_.image.empty() || object_ == nullptr) {
    return Error(KREPLAY_STATUS_ERROR, "begin() before configure()");
  }
  if (in_pass_) return Error(KREPLAY_STATUS_ERROR, "begin() inside a pass");
  if (config_used_ && passes_done_ > 0 && !all_submitted_) {
    // The collection before was left before its last pass (a range that ran one pass, or a
    // learning run, counted with a set of more). On an H100 (2026-12-07) the next collection on
    // the same object then reported every pass submitted after its first, and its second start()
    // failed: the range's later passes lost their counters. A fresh object starts from pass 0.
    RETURN_IF_ERROR(reenable());
    RETURN_IF_ERROR(size_counter_data(config_.metrics, max_ranges_));
  }
  auto init = KR_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  init.pRangeProfilerObject = object_;
  init.counterDataSize = counter_data_.size();
  init.pCounterData = counter_data_.data();
  {
    TimedCall timed(costs_.counter_data_init);
    KR_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerCounterDataImageInitialize(&init));
  }
  auto set = KR_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
  set.pRangeProfilerObject = object_;
  set.configSize = config_.image.size();
  set.pConfig = config_.image.data();
  set.counterDataImageSize = counter_data_.size();
  set.pCounterDataImage = counter_data_.data();
  set.range = mode_ == RangeMode::kUser ? CUPTI_UserRange : CUPTI_AutoRange;
  set.replayMode = CUPTI_UserReplay;
  set.maxRangesPerPass = max_ranges_;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  {
    TimedCall timed(costs_.set_config);
    KR_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerSetConfig(&set));
  }
  config_used_ = true;
  all_submitted_ = false;
  decoded_ = false;
  passes_done_ = 0;
  return Status::Ok();
}

Status RangeProfiler::start() {
  if (!config_used_) return Error(KREPLAY_STATUS_ERROR, "start() before begin()");
  if (in_pass_) return Error(KREPLAY_STATUS_ERROR, "start() twice without stop()");
  if (all_submitted_) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("start() after all {} passes were submitted; call begin() for a new "
                             "collection",
                             config_.pass_count));
  }
  auto params = KR_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
  params.pRangeProfilerObject = object_;
  {
    TimedCall timed(costs_.start);
    KR_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerStart(&params));
  }
  in_pass_ = true;
  return Status::Ok();
}

Result<PassResult> RangeProfiler::stop() {
  if (!in_pass_) return Error(KREPLAY_STATUS_ERROR, "stop() without start()");
  auto params = KR_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
  params.pRangeProfilerObject = object_;
  in_pass_ = false;
  {
    TimedCall timed(costs_.stop);
    KR_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerStop(&params));
  }
  ++passes_done_;
  all_submitted_ = params.isAllPassSubmitted != 0;
  return PassResult{all_submitted_, params.passIndex};
}

Status RangeProfiler::push_range(const std::string& name) {
  if (mode_ != RangeMode::kUser) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "push_range() needs RangeMode::kUser");
  }
  if (!in_pass_) return Error(KREPLAY_STATUS_ERROR, "push_range() outside a pass");
  auto params = KR_CUPTI_PARAMS(CUpti_RangeProfiler_PushRange_Params);
  params.pRangeProfilerObject = object_;
  params.pRangeName = name.c_str();
  TimedCall timed(costs_.push_range);
  KR_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerPushRange(&params));
  return Status::Ok();
}

Status RangeProfiler::pop_range() {
  if (mode_ != RangeMode::kUser) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "pop_range() needs RangeMode::kUser");
  }
  if (!in_pass_) return Error(KREPLAY_STATUS_ERROR, "pop_range() outside a pass");
  auto params = KR_CUPTI_PARAMS(CUpti_RangeProfiler_PopRange_Params);
  params.pRangeProfilerObject = object_;
  TimedCall timed(costs_.pop_range);
  KR_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerPopRange(&params));
  return Status::Ok();
}

Result<size_t> RangeProfiler::decode() {
  if (in_pass_) return Error(KREPLAY_STATUS_ERROR, "decode() inside a pass");
  if (!all_submitted_) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("decode() after {} of {} passes: CUPTI has not seen every pass",
                             passes_done_, config_.pass_count));
  }
  auto params = KR_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
  params.pRangeProfilerObject = object_;
  {
    TimedCall timed(costs_.decode);
    KR_CUPTI_RETURN_IF_ERROR(cuptiRangeProfilerDecodeData(&params));
  }
  decoded_ = true;
  costs_.ranges_dropped += params.numOfRangeDropped;
  if (params.numOfRangeDropped) {
    KR_WARN("range profiler dropped {} range(s): more than {} ranges in a pass",
            params.numOfRangeDropped, max_ranges_);
  }
  return params.numOfRangeDropped;
}

Result<std::vector<RangeValues>> RangeProfiler::values() {
  if (!decoded_) return Error(KREPLAY_STATUS_ERROR, "values() before decode()");
  ASSIGN_OR_RETURN(size_t count, ProfilerHost::range_count(counter_data_));
  std::vector<RangeValues> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    TimedCall timed(costs_.evaluate);
    RangeValues range;
    ASSIGN_OR_RETURN(range.name, ProfilerHost::range_name(counter_data_, i));
    ASSIGN_OR_RETURN(range.values, host_->evaluate(counter_data_, i, config_.metrics));
    out.push_back(std::move(range));
  }
  return out;
}

}  // namespace kreplay::cupti
