#include "backends/cuda/cupti/legacy_host.hpp"

#include <cupti_profiler_target.h>
#include <fmt/format.h>
#include <nvperf_cuda_host.h>
#include <nvperf_host.h>

#include <mutex>
#include <set>
#include <utility>

#include "backends/cuda/cupti/cupti_common.hpp"

namespace kreplay::cupti {
namespace {

/// A zeroed NVPW parameter struct with structSize set (NVPW structs have pPriv too).
template <typename T>
T nvpw_params(size_t struct_size) {
  T params{};
  params.structSize = struct_size;
  params.pPriv = nullptr;
  return params;
}
#define KR_NVPW_PARAMS(Type) nvpw_params<Type>(Type##_STRUCT_SIZE)

Status nvpw_status(NVPA_Status status, std::string_view call, std::string_view what = {}) {
  if (status == NVPA_STATUS_SUCCESS) return Status::Ok();
  std::string message = fmt::format("{} failed: {}", call, nvpa_status_name(status));
  if (!what.empty()) message += fmt::format(" ({})", what);
  kreplay_status_t code = KREPLAY_STATUS_ERROR;
  if (status == NVPA_STATUS_INVALID_ARGUMENT || status == NVPA_STATUS_INVALID_METRIC_ID) {
    code = KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND;
  } else if (status == NVPA_STATUS_OUT_OF_MEMORY) {
    code = KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES;
  } else if (status == NVPA_STATUS_UNSUPPORTED_GPU || status == NVPA_STATUS_NOT_SUPPORTED ||
             status == NVPA_STATUS_NOT_LOADED || status == NVPA_STATUS_FUNCTION_NOT_FOUND) {
    code = KREPLAY_STATUS_ERROR_NOT_AVAILABLE;
  }
  return Error(code, std::move(message));
}

#define KR_NVPW_RETURN_IF_ERROR(call, ...)                                \
  do {                                                                    \
    NVPA_Status kr_nvpw_status_ = (call);                                 \
    if (kr_nvpw_status_ != NVPA_STATUS_SUCCESS)                           \
      return nvpw_status(kr_nvpw_status_, #call __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)

/// NVPW_InitializeHost, once per process. Caller holds host_api_mutex().
Status initialize_host_locked() {
  static const Status status = [] {
    auto params = KR_NVPW_PARAMS(NVPW_InitializeHost_Params);
    return nvpw_status(NVPW_InitializeHost(&params), "NVPW_InitializeHost");
  }();
  return status;
}

const NVPW_MetricEvalRequest* requests_of(const std::vector<uint8_t>& bytes) {
  return reinterpret_cast<const NVPW_MetricEvalRequest*>(bytes.data());
}

}  // namespace

const char* nvpa_status_name(int status) {
  const char* name = nullptr;
  const char* comment = nullptr;
  NVPW_NVPAStatusToString(static_cast<NVPA_Status>(status), &name, &comment);
  return name ? name : "NVPA_STATUS_(unknown)";
}

LegacyMetrics::~LegacyMetrics() {
  if (evaluator_ == nullptr) return;
  auto params = KR_NVPW_PARAMS(NVPW_MetricsEvaluator_Destroy_Params);
  params.pMetricsEvaluator = evaluator_;
  std::lock_guard api(host_api_mutex());
  NVPW_MetricsEvaluator_Destroy(&params);
}

Result<std::unique_ptr<LegacyMetrics>> LegacyMetrics::create(
    const std::string& chip, const std::vector<std::string>& metrics,
    std::span<const uint8_t> counter_availability) {
  if (chip.empty()) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "no chip name");
  if (metrics.empty()) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "no metrics");
  std::unique_ptr<LegacyMetrics> self(new LegacyMetrics);
  self->chip_ = chip;
  self->metrics_ = metrics;
  self->availability_.assign(counter_availability.begin(), counter_availability.end());
  // nvperf_cuda_host.h: "Use either 'pChipName' or 'pCounterAvailabilityImage'" for the evaluator
  // and the counter-data builder. The raw counters a metric needs and the prefix do not depend on
  // what this context may count, so both take the chip name; only the config image
  // (config_image()) takes the availability as well, as CUPTI's samples do.

  std::lock_guard api(host_api_mutex());
  RETURN_IF_ERROR(initialize_host_locked());

  // The evaluator: raw dependencies now, values later (it outlives this call).
  auto scratch = KR_NVPW_PARAMS(NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize_Params);
  scratch.pChipName = chip.c_str();
  KR_NVPW_RETURN_IF_ERROR(NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize(&scratch), chip);
  self->evaluator_scratch_.resize(scratch.scratchBufferSize);
  auto init = KR_NVPW_PARAMS(NVPW_CUDA_MetricsEvaluator_Initialize_Params);
  init.pScratchBuffer = self->evaluator_scratch_.data();
  init.scratchBufferSize = self->evaluator_scratch_.size();
  init.pChipName = chip.c_str();
  KR_NVPW_RETURN_IF_ERROR(NVPW_CUDA_MetricsEvaluator_Initialize(&init), chip);
  self->evaluator_ = init.pMetricsEvaluator;

  self->requests_.assign(metrics.size() * sizeof(NVPW_MetricEvalRequest), 0);
  auto* requests = reinterpret_cast<NVPW_MetricEvalRequest*>(self->requests_.data());
  std::set<std::string> seen;
  for (size_t i = 0; i < metrics.size(); ++i) {
    auto convert = KR_NVPW_PARAMS(NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest_Params);
    convert.pMetricsEvaluator = self->evaluator_;
    convert.pMetricName = metrics[i].c_str();
    convert.pMetricEvalRequest = &requests[i];
    convert.metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE;
    KR_NVPW_RETURN_IF_ERROR(NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest(&convert),
                            metrics[i]);
    auto deps = KR_NVPW_PARAMS(NVPW_MetricsEvaluator_GetMetricRawDependencies_Params);
    deps.pMetricsEvaluator = self->evaluator_;
    deps.pMetricEvalRequests = &requests[i];
    deps.numMetricEvalRequests = 1;
    deps.metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE;
    deps.metricEvalRequestStrideSize = sizeof(NVPW_MetricEvalRequest);
    KR_NVPW_RETURN_IF_ERROR(NVPW_MetricsEvaluator_GetMetricRawDependencies(&deps), metrics[i]);
    std::vector<const char*> names(deps.numRawDependencies);
    deps.ppRawDependencies = names.data();
    KR_NVPW_RETURN_IF_ERROR(NVPW_MetricsEvaluator_GetMetricRawDependencies(&deps), metrics[i]);
    for (size_t k = 0; k < deps.numRawDependencies; ++k) {
      if (names[k] && seen.insert(names[k]).second) self->raw_names_.emplace_back(names[k]);
    }
  }

  // The prefix: the raw counters, isolated, instances kept (as CUPTI's samples ask).
  std::vector<NVPA_RawMetricRequest> raw(self->raw_names_.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    raw[i] = NVPA_RawMetricRequest{};
    raw[i].structSize = NVPA_RAW_METRIC_REQUEST_STRUCT_SIZE;
    raw[i].pMetricName = self->raw_names_[i].c_str();
    raw[i].isolated = 1;
    raw[i].keepInstances = 1;
  }
  auto builder = KR_NVPW_PARAMS(NVPW_CUDA_CounterDataBuilder_Create_Params);
  builder.pChipName = chip.c_str();
  KR_NVPW_RETURN_IF_ERROR(NVPW_CUDA_CounterDataBuilder_Create(&builder), chip);
  auto destroy = KR_NVPW_PARAMS(NVPW_CounterDataBuilder_Destroy_Params);
  destroy.pCounterDataBuilder = builder.pCounterDataBuilder;
  Status built = [&]() -> Status {
    auto add = KR_NVPW_PARAMS(NVPW_CounterDataBuilder_AddMetrics_Params);
    add.pCounterDataBuilder = builder.pCounterDataBuilder;
    add.pRawMetricRequests = raw.data();
    add.numMetricRequests = raw.size();
    KR_NVPW_RETURN_IF_ERROR(NVPW_CounterDataBuilder_AddMetrics(&add));
    auto prefix = KR_NVPW_PARAMS(NVPW_CounterDataBuilder_GetCounterDataPrefix_Params);
    prefix.pCounterDataBuilder = builder.pCounterDataBuilder;
    KR_NVPW_RETURN_IF_ERROR(NVPW_CounterDataBuilder_GetCounterDataPrefix(&prefix));
    self->prefix_.resize(prefix.bytesCopied);
    prefix.bytesAllocated = self->prefix_.size();
    prefix.pBuffer = self->prefix_.data();
    KR_NVPW_RETURN_IF_ERROR(NVPW_CounterDataBuilder_GetCounterDataPrefix(&prefix));
    self->prefix_.resize(prefix.bytesCopied);
    return Status::Ok();
  }();
  NVPW_CounterDataBuilder_Destroy(&destroy);
  RETURN_IF_ERROR(built);
  return self;
}

Result<LegacyMetrics::NvpwConfig> LegacyMetrics::config_image() {
  std::vector<NVPA_RawMetricRequest> raw(raw_names_.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    raw[i] = NVPA_RawMetricRequest{};
    raw[i].structSize = NVPA_RAW_METRIC_REQUEST_STRUCT_SIZE;
    raw[i].pMetricName = raw_names_[i].c_str();
    raw[i].isolated = 1;
    raw[i].keepInstances = 1;
  }
  std::lock_guard api(host_api_mutex());
  auto create = KR_NVPW_PARAMS(NVPW_CUDA_RawMetricsConfig_Create_V2_Params);
  create.activityKind = NVPA_ACTIVITY_KIND_PROFILER;
  create.pChipName = chip_.c_str();
  create.pCounterAvailabilityImage = availability_.empty() ? nullptr : availability_.data();
  KR_NVPW_RETURN_IF_ERROR(NVPW_CUDA_RawMetricsConfig_Create_V2(&create), chip_);
  NVPA_RawMetricsConfig* config = create.pRawMetricsConfig;
  NvpwConfig out;
  Status built = [&]() -> Status {
    if (!availability_.empty()) {
      auto avail = KR_NVPW_PARAMS(NVPW_RawMetricsConfig_SetCounterAvailability_Params);
      avail.pRawMetricsConfig = config;
      avail.pCounterAvailabilityImage = availability_.data();
      KR_NVPW_RETURN_IF_ERROR(NVPW_RawMetricsConfig_SetCounterAvailability(&avail));
    }
    auto begin = KR_NVPW_PARAMS(NVPW_RawMetricsConfig_BeginPassGroup_Params);
    begin.pRawMetricsConfig = config;
    KR_NVPW_RETURN_IF_ERROR(NVPW_RawMetricsConfig_BeginPassGroup(&begin));
    auto add = KR_NVPW_PARAMS(NVPW_RawMetricsConfig_AddMetrics_Params);
    add.pRawMetricsConfig = config;
    add.pRawMetricRequests = raw.data();
    add.numMetricRequests = raw.size();
    KR_NVPW_RETURN_IF_ERROR(NVPW_RawMetricsConfig_AddMetrics(&add));
    auto end = KR_NVPW_PARAMS(NVPW_RawMetricsConfig_EndPassGroup_Params);
    end.pRawMetricsConfig = config;
    KR_NVPW_RETURN_IF_ERROR(NVPW_RawMetricsConfig_EndPassGroup(&end));
    auto generate = KR_NVPW_PARAMS(NVPW_RawMetricsConfig_GenerateConfigImage_Params);
    generate.pRawMetricsConfig = config;
    KR_NVPW_RETURN_IF_ERROR(NVPW_RawMetricsConfig_GenerateConfigImage(&generate));
    auto get = KR_NVPW_PARAMS(NVPW_RawMetricsConfig_GetConfigImage_Params);
    get.pRawMetricsConfig = config;
    KR_NVPW_RETURN_IF_ERROR(NVPW_RawMetricsConfig_GetConfigImage(&get));
    out.image.resize(get.bytesCopied);
    get.bytesAllocated = out.image.size();
    get.pBuffer = out.image.data();
    KR_NVPW_RETURN_IF_ERROR(NVPW_RawMetricsConfig_GetConfigImage(&get));
    out.image.resize(get.bytesCopied);
    auto passes = KR_NVPW_PARAMS(NVPW_RawMetricsConfig_GetNumPasses_V2_Params);
    passes.pRawMetricsConfig = config;
    KR_NVPW_RETURN_IF_ERROR(NVPW_RawMetricsConfig_GetNumPasses_V2(&passes));
    out.pass_count = passes.numPasses;
    return Status::Ok();
  }();
  auto destroy = KR_NVPW_PARAMS(NVPW_RawMetricsConfig_Destroy_Params);
  destroy.pRawMetricsConfig = config;
  NVPW_RawMetricsConfig_Destroy(&destroy);
  RETURN_IF_ERROR(built);
  return out;
}

Status LegacyMetrics::init_image(LegacyCounterData& data, uint32_t max_ranges,
                                 uint32_t max_name_length, bool allocate) const {
  auto options = KR_CUPTI_PARAMS(CUpti_Profiler_CounterDataImageOptions);
  options.pCounterDataPrefix = prefix_.data();
  options.counterDataPrefixSize = prefix_.size();
  options.maxNumRanges = max_ranges;
  options.maxNumRangeTreeNodes = max_ranges;
  options.maxRangeNameLength = max_name_length;
  if (allocate) {
    auto size = KR_CUPTI_PARAMS(CUpti_Profiler_CounterDataImage_CalculateSize_Params);
    size.sizeofCounterDataImageOptions = CUpti_Profiler_CounterDataImageOptions_STRUCT_SIZE;
    size.pOptions = &options;
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerCounterDataImageCalculateSize(&size));
    data.image.assign(size.counterDataImageSize, 0);
  }
  auto init = KR_CUPTI_PARAMS(CUpti_Profiler_CounterDataImage_Initialize_Params);
  init.sizeofCounterDataImageOptions = CUpti_Profiler_CounterDataImageOptions_STRUCT_SIZE;
  init.pOptions = &options;
  init.counterDataImageSize = data.image.size();
  init.pCounterDataImage = data.image.data();
  KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerCounterDataImageInitialize(&init));
  if (allocate) {
    auto ssize = KR_CUPTI_PARAMS(CUpti_Profiler_CounterDataImage_CalculateScratchBufferSize_Params);
    ssize.counterDataImageSize = data.image.size();
    ssize.pCounterDataImage = data.image.data();
    KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerCounterDataImageCalculateScratchBufferSize(&ssize));
    data.scratch.assign(ssize.counterDataScratchBufferSize, 0);
  }
  auto sinit = KR_CUPTI_PARAMS(CUpti_Profiler_CounterDataImage_InitializeScratchBuffer_Params);
  sinit.counterDataImageSize = data.image.size();
  sinit.pCounterDataImage = data.image.data();
  sinit.counterDataScratchBufferSize = data.scratch.size();
  sinit.pCounterDataScratchBuffer = data.scratch.data();
  KR_CUPTI_RETURN_IF_ERROR(cuptiProfilerCounterDataImageInitializeScratchBuffer(&sinit));
  data.max_ranges = max_ranges;
  return Status::Ok();
}

Result<LegacyCounterData> LegacyMetrics::make_counter_data(uint32_t max_ranges,
                                                           uint32_t max_name_length) const {
  if (max_ranges == 0) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "max_ranges must be at least 1");
  }
  LegacyCounterData data;
  RETURN_IF_ERROR(init_image(data, max_ranges, max_name_length, true));
  return data;
}

Status LegacyMetrics::reinitialize(LegacyCounterData& data, uint32_t max_name_length) const {
  if (data.image.empty()) return Error(KREPLAY_STATUS_ERROR, "reinitialize() of an empty image");
  return init_image(data, data.max_ranges, max_name_length, false);
}

Result<std::vector<double>> LegacyMetrics::evaluate(std::span<const uint8_t> counter_data_image,
                                                    size_t range_index) {
  if (counter_data_image.empty()) {
    return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "empty counter-data image");
  }
  std::vector<double> values(metrics_.size(), 0.0);
  std::lock_guard api(host_api_mutex());
  auto attrs = KR_NVPW_PARAMS(NVPW_MetricsEvaluator_SetDeviceAttributes_Params);
  attrs.pMetricsEvaluator = evaluator_;
  attrs.pCounterDataImage = counter_data_image.data();
  attrs.counterDataImageSize = counter_data_image.size();
  KR_NVPW_RETURN_IF_ERROR(NVPW_MetricsEvaluator_SetDeviceAttributes(&attrs));
  auto eval = KR_NVPW_PARAMS(NVPW_MetricsEvaluator_EvaluateToGpuValues_Params);
  eval.pMetricsEvaluator = evaluator_;
  eval.pMetricEvalRequests = requests_of(requests_);
  eval.numMetricEvalRequests = metrics_.size();
  eval.metricEvalRequestStructSize = NVPW_MetricEvalRequest_STRUCT_SIZE;
  eval.metricEvalRequestStrideSize = sizeof(NVPW_MetricEvalRequest);
  eval.pCounterDataImage = counter_data_image.data();
  eval.counterDataImageSize = counter_data_image.size();
  eval.rangeIndex = range_index;
  eval.isolated = 1;
  eval.pMetricValues = values.data();
  KR_NVPW_RETURN_IF_ERROR(NVPW_MetricsEvaluator_EvaluateToGpuValues(&eval),
                          fmt::format("range {}", range_index));
  return values;
}

}  // namespace kreplay::cupti
