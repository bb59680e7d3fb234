// The CUDA driver entry points kreplay_cuda_memory uses, resolved at run time from libcuda.so.1
// through cuGetProcAddress (the same reasoning as cupti/driver_api.hpp: no DT_NEEDED on libcuda,
// so binaries that link this library load on a machine with no driver, and the GPU tests skip
// there instead of failing to start). Inside a CUDA application libcuda.so.1 is already loaded
// and dlopen only takes another reference.
//
// Calls through these pointers are ordinary driver calls: CUPTI sees them. Code that makes them
// on kreplay's behalf holds a kreplay::cuda::InternalScope (internal_guard.hpp).
//
// Thread-safe: the library is opened and every entry point resolved once, on first use.
#pragma once

#include <cuda.h>

#include <string>

#include "common/status.hpp"

namespace kreplay::cuda::memdrv {

// X(name): one driver function, by its cuda.h name (the macro picks the _v2 symbol, and
// cuGetProcAddress the matching version for CUDA_VERSION).
// clang-format off
#define KR_MEMDRV_FUNCTIONS(X)                                                                     \
  X(cuInit) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet)               \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)       \
  X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxPushCurrent)           \
  X(cuCtxPopCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize) X(cuModuleLoadData) X(cuModuleUnload)   \
  X(cuModuleGetFunction) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuLaunchKernel)          \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery) X(cuMemAlloc)       \
  X(cuMemAllocManaged) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)                             \
  X(cuMemHostGetDevicePointer) X(cuMemGetInfo) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)           \
  X(cuMemcpyDtoDAsync) X(cuMemsetD8Async) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD)          \
  X(cuMemsetD32Async) X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize)                      \
  X(cuEventElapsedTime) X(cuEventDestroy)
// clang-format on

#define KR_MEMDRV_MEMBER(name) decltype(&::name) name = nullptr;

/// The resolved entry points. Use only after init() returned OK.
struct Driver {
  KR_MEMDRV_FUNCTIONS(KR_MEMDRV_MEMBER)
};

#undef KR_MEMDRV_MEMBER

/// Opens libcuda.so.1, resolves every entry point and calls cuInit(0), once per process.
/// NOT_AVAILABLE with the reason when there is no driver ("libcuda.so.1 not found ...") or no
/// device ("cuInit failed: CUDA_ERROR_NO_DEVICE ..."); the same answer on every call.
Status init();

/// The table; every pointer is set once init() returned OK (KR_CHECKs that it did).
const Driver& api();

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", or "CUresult N" when the driver is unusable.
std::string error_text(CUresult result);

/// OK for CUDA_SUCCESS; else "<what> failed: <error_text>" with OUT_OF_RESOURCES for
/// out-of-memory results, NOT_AVAILABLE for no device or driver, ERROR otherwise.
Status check(CUresult result, const char* what);

}  // namespace kreplay::cuda::memdrv
