// See range_call_names.hpp.
#include "backends/cuda/range_call_names.hpp"

#include <cstring>

namespace kreplay::cuda::range_calls {
namespace {

bool starts_with(const char* s, const char* p) {
  return std::strncmp(s, p, std::strlen(p)) == 0;
}

}  // namespace

// NONE: the call cannot observe or change device memory (queries of handles and attributes,
// event recording, context switches); everything else closes the range first.
kreplay_range_close_reason_t range_close_reason(const char* name) {
  if (name == nullptr) return KREPLAY_RANGE_CLOSE_OTHER;
  // Of the primary context's calls only Retain, GetState and SetFlags: Release and Reset may
  // destroy the context and its memory, so they close the range while the context still lives.
  static constexpr const char* kHarmless[] = {
      "cuCtxGet", "cuCtxSetCurrent", "cuCtxPushCurrent", "cuCtxPopCurrent", "cuDeviceGet",
      "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxSetFlags",
      "cuDeviceCanAccessPeer", "cuDeviceComputeCapability", "cuDeviceTotalMem",
      "cuDriverGetVersion", "cuFuncGet", "cuFuncSet", "cuFuncIsLoaded", "cuFuncLoad", "cuKernelGet",
      "cuKernelSet", "cuLibraryGet", "cuModuleGet", "cuGetProcAddress", "cuGetError",
      "cuGetExportTable", "cuPointerGet", "cuStreamGet", "cuStreamIsCapturing", "cuEventCreate",
      "cuEventDestroy", "cuEventRecord", "cuEventElapsedTime", "cuStreamCreate", "cuOccupancy",
      "cuInit", "cuProfilerInitialize", "cuCtxGetStreamPriorityRange",
      "cuThreadExchangeStreamCaptureMode", "cuMemGetInfo", "cuMemGetAddressRange",
      "cuMemPoolGetAttribute", "cuMemPoolSetAttribute", "cuDeviceGetMemPool",
      "cuDeviceGetDefaultMemPool", "cuMemGetAllocationGranularity", "cuCtxGetDevice"};
  for (const char* h : kHarmless) {
    if (starts_with(name, h)) return KREPLAY_RANGE_CLOSE_NONE;
  }
  if (starts_with(name, "cuMemcpy") || starts_with(name, "cuMemset") || starts_with(name, "cuMem"))
    return KREPLAY_RANGE_CLOSE_MEMORY;
  // A host function runs on the host behind the range's launches and may read what they wrote.
  if (starts_with(name, "cuLaunchHostFunc")) return KREPLAY_RANGE_CLOSE_SYNCHRONIZE;
  if (starts_with(name, "cuModule") || starts_with(name, "cuLibrary"))
    return KREPLAY_RANGE_CLOSE_MODULE;
  if (starts_with(name, "cuGraph") || starts_with(name, "cuStreamBeginCapture"))
    return KREPLAY_RANGE_CLOSE_GRAPH;
  return KREPLAY_RANGE_CLOSE_OTHER;
}

/// A plain synchronization or query: the host learns that work finished and observes no memory
/// (Engine::range_sync decides whether the open range stays open).
bool is_plain_sync(const char* name) {
  return name != nullptr &&
         (starts_with(name, "cuCtxSynchronize") || starts_with(name, "cuStreamSynchronize") ||
          starts_with(name, "cuEventSynchronize") || starts_with(name, "cuStreamQuery") ||
          starts_with(name, "cuEventQuery"));
}

}  // namespace kreplay::cuda::range_calls
