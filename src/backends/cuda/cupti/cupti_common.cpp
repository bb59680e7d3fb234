#include "backends/cuda/cupti/cupti_common.hpp"

#include <cupti_profiler_target.h>
#include <fmt/format.h>

namespace kreplay::cupti {

std::string result_name(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) == CUPTI_SUCCESS && text != nullptr) return text;
  return fmt::format("CUPTI error {}", static_cast<int>(result));
}

std::string explain(CUptiResult result) {
  switch (result) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      return "counters not permitted: run as root or set NVreg_RestrictProfilingToAdminUsers=0 "
             "(options nvidia NVreg_RestrictProfilingToAdminUsers=0, then reload the driver)";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return "counters not permitted on this vGPU: the hypervisor must enable profiling for the VM";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return "CUPTI already held by another profiler (ncu/nsys/compute-sanitizer, or another "
             "CUPTI client in this process); CUPTI 13.0 allows one";
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      return "the legacy CUPTI profiler API is already initialized in this process";
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
      return "the legacy CUPTI profiler API is not supported on this device";
    case CUPTI_ERROR_HARDWARE_BUSY:
      return "the device's counters are in use by another profiling or sampling session (another "
             "process under ncu/nsys, or DCGM profiling metrics)";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
      return "counters are not supported on this virtualized device (vGPU)";
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
      return "counters are not available while confidential computing is enabled";
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
      return "NVIDIA CMP (crypto mining processor) devices do not support profiling";
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
      return "counters are not supported on this MIG instance";
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
      return "counters are not supported while SLI is enabled";
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      return "counters are not supported under WSL with this driver";
    case CUPTI_ERROR_INVALID_CHIP_NAME:
      return "the chip is not one CUPTI knows (see the supported chips)";
    case CUPTI_ERROR_NOT_INITIALIZED:
      return "CUPTI or the CUDA driver is not initialized (no GPU, or no libcuda.so.1)";
    case CUPTI_ERROR_NOT_SUPPORTED:
      return "not supported on this device or configuration";
    default:
      return {};
  }
}

kreplay_status_t status_code(CUptiResult result) {
  switch (result) {
    case CUPTI_SUCCESS:
      return KREPLAY_STATUS_SUCCESS;
    case CUPTI_ERROR_INVALID_METRIC_NAME:
    case CUPTI_ERROR_INVALID_METRIC_ID:
      return KREPLAY_STATUS_ERROR_COUNTER_NOT_FOUND;
    case CUPTI_ERROR_OUT_OF_MEMORY:
    case CUPTI_ERROR_MAX_LIMIT_REACHED:
      return KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_INVALID_CHIP_NAME:
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_NOT_SUPPORTED:
      return KREPLAY_STATUS_ERROR_NOT_AVAILABLE;
    default:
      return KREPLAY_STATUS_ERROR;
  }
}

Status cupti_status(CUptiResult result, std::string_view call) {
  if (result == CUPTI_SUCCESS) return Status::Ok();
  // "cuptiFoo(&params)" -> "cuptiFoo".
  std::string_view function = call.substr(0, call.find('('));
  std::string message = fmt::format("{} failed: {}", function, result_name(result));
  std::string why = explain(result);
  const char* detail = nullptr;
  if (why.empty() && cuptiGetErrorMessage(result, &detail) == CUPTI_SUCCESS && detail != nullptr &&
      *detail) {
    // CUPTI's own text, when kreplay has none: one line (it ends some with a newline).
    std::string text(detail);
    for (char& c : text) {
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    message += fmt::format(" ({})", text);
  }
  if (!why.empty()) message += ": " + why;
  return Status(status_code(result), std::move(message));
}

std::mutex& host_api_mutex() {
  // Never destroyed: host objects may be released from static destructors at exit.
  static std::mutex* mu = new std::mutex;
  return *mu;
}

Status profiler_initialize() {
  static const Status status = [] {
    auto params = KR_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
    return cupti_status(cuptiProfilerInitialize(&params), "cuptiProfilerInitialize");
  }();
  return status;
}

}  // namespace kreplay::cupti
