#include "backends/cuda/cupti/service_catalog.hpp"

#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "backends/cuda/cupti/cupti_common.hpp"
#include "backends/cuda/cupti/profiler_host.hpp"
#include "backends/cuda/memory/driver.hpp"

namespace kreplay::cupti {

bool in_sass_default_set(const std::string& name) {
  for (const char* d : kSassDefaultSet) {
    if (name == d) return true;
  }
  return false;
}

Result<std::vector<SassMetricInfo>> sass_metrics(const std::string& chip) {
  auto count = KR_CUPTI_PARAMS(CUpti_SassMetrics_GetNumOfMetrics_Params);
  count.pChipName = chip.c_str();
  CUptiResult r = cuptiSassMetricsGetNumOfMetrics(&count);
  if (r == CUPTI_ERROR_NOT_INITIALIZED) {
    // CUPTI answers NOT_INITIALIZED until its profiler is initialized: the host API does it with
    // no driver (a chip's host object; seen with CUPTI 13.0 on a machine without a GPU), the
    // target API (cuptiProfilerInitialize) only with one.
    if (ProfilerHost::shared(chip).ok()) r = cuptiSassMetricsGetNumOfMetrics(&count);
  }
  if (r == CUPTI_ERROR_NOT_INITIALIZED) {
    auto init = KR_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
    if (cuptiProfilerInitialize(&init) == CUPTI_SUCCESS)
      r = cuptiSassMetricsGetNumOfMetrics(&count);
  }
  if (r != CUPTI_SUCCESS) {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                 fmt::format("CUPTI cannot list the SASS metrics of {} here ({}); run "
                             "--list-avail on the GPU machine",
                             chip, result_name(r)));
  }
  std::vector<CUpti_SassMetrics_MetricDetails> details(count.numOfMetrics);
  auto get = KR_CUPTI_PARAMS(CUpti_SassMetrics_GetMetrics_Params);
  get.pChipName = chip.c_str();
  get.numOfMetrics = details.size();
  get.pMetricsList = details.data();
  KR_CUPTI_RETURN_IF_ERROR(cuptiSassMetricsGetMetrics(&get));
  std::vector<SassMetricInfo> out;
  out.reserve(details.size());
  for (const auto& d : details) {
    out.push_back({d.metricId, d.pMetricName ? d.pMetricName : "",
                   d.pMetricDescription ? d.pMetricDescription : ""});
  }
  std::sort(out.begin(), out.end(),
            [](const SassMetricInfo& a, const SassMetricInfo& b) { return a.name < b.name; });
  return out;
}

Result<std::vector<StallReason>> pc_stall_reasons(CUcontext ctx) {
  size_t n = 0;
  CUpti_PCSamplingGetNumStallReasonsParams num{};
  num.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
  num.ctx = ctx;
  num.numStallReasons = &n;
  KR_CUPTI_RETURN_IF_ERROR(cuptiPCSamplingGetNumStallReasons(&num));
  std::vector<uint32_t> index(n);
  std::vector<std::vector<char>> storage(n, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, 0));
  std::vector<char*> names(n);
  for (size_t i = 0; i < n; ++i) names[i] = storage[i].data();
  CUpti_PCSamplingGetStallReasonsParams get{};
  get.size = CUpti_PCSamplingGetStallReasonsParamsSize;
  get.ctx = ctx;
  get.numStallReasons = n;
  get.stallReasonIndex = index.data();
  get.stallReasons = names.data();
  KR_CUPTI_RETURN_IF_ERROR(cuptiPCSamplingGetStallReasons(&get));
  std::vector<StallReason> out;
  for (size_t i = 0; i < n; ++i) {
    storage[i].back() = 0;
    out.push_back({index[i], storage[i].data()});
  }
  return out;
}

Result<std::vector<StallReason>> pc_stall_reasons_of_device(int ordinal) {
  namespace memdrv = kreplay::cuda::memdrv;
  RETURN_IF_ERROR(memdrv::init());
  const memdrv::Driver& d = memdrv::api();
  CUdevice dev = 0;
  RETURN_IF_ERROR(memdrv::check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet"));
  CUcontext ctx = nullptr;
  RETURN_IF_ERROR(memdrv::check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain"));
  Result<std::vector<StallReason>> out =
      Error(KREPLAY_STATUS_ERROR_INTERNAL, "stall reasons not read");
  if (Status pushed = memdrv::check(d.cuCtxPushCurrent(ctx), "cuCtxPushCurrent"); !pushed.ok()) {
    out = pushed;
  } else {
    CUpti_PCSamplingEnableParams en{};
    en.size = CUpti_PCSamplingEnableParamsSize;
    en.ctx = ctx;
    CUptiResult r = cuptiPCSamplingEnable(&en);
    if (r != CUPTI_SUCCESS) {
      out = cupti_status(r, "cuptiPCSamplingEnable");
    } else {
      out = pc_stall_reasons(ctx);
      CUpti_PCSamplingDisableParams dis{};
      dis.size = CUpti_PCSamplingDisableParamsSize;
      dis.ctx = ctx;
      (void)cuptiPCSamplingDisable(&dis);
    }
    CUcontext popped = nullptr;
    (void)d.cuCtxPopCurrent(&popped);
  }
  (void)d.cuDevicePrimaryCtxRelease(dev);
  return out;
}

}  // namespace kreplay::cupti
