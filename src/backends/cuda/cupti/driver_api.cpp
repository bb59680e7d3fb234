#include "backends/cuda/cupti/driver_api.hpp"

#include "backends/cuda/memory/driver.hpp"

// The driver is opened and its entry points resolved in one place for the whole backend
// (memory/driver.hpp); these are the few calls the CUPTI wrappers need, over that table.
namespace kreplay::cupti::driver {

namespace memdrv = kreplay::cuda::memdrv;

std::string error_text(CUresult result) {
  return memdrv::error_text(result);
}

Status init() {
  return memdrv::init();
}

Result<int> device_count() {
  RETURN_IF_ERROR(init());
  int count = 0;
  RETURN_IF_ERROR(memdrv::check(memdrv::api().cuDeviceGetCount(&count), "cuDeviceGetCount"));
  return count;
}

Result<CUcontext> current_context() {
  RETURN_IF_ERROR(init());
  CUcontext ctx = nullptr;
  RETURN_IF_ERROR(memdrv::check(memdrv::api().cuCtxGetCurrent(&ctx), "cuCtxGetCurrent"));
  return ctx;
}

Result<CUdevice> context_device(CUcontext ctx) {
  RETURN_IF_ERROR(init());
  if (ctx == nullptr) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "no CUDA context");
  const memdrv::Driver& a = memdrv::api();
  RETURN_IF_ERROR(memdrv::check(a.cuCtxPushCurrent(ctx), "cuCtxPushCurrent"));
  CUdevice device = 0;
  CUresult r = a.cuCtxGetDevice(&device);
  CUcontext popped = nullptr;
  CUresult pop = a.cuCtxPopCurrent(&popped);
  RETURN_IF_ERROR(memdrv::check(r, "cuCtxGetDevice"));
  RETURN_IF_ERROR(memdrv::check(pop, "cuCtxPopCurrent"));
  return device;
}

Result<std::string> device_name(CUdevice device) {
  RETURN_IF_ERROR(init());
  char name[256] = {};
  RETURN_IF_ERROR(memdrv::check(memdrv::api().cuDeviceGetName(name, sizeof(name) - 1, device),
                                "cuDeviceGetName"));
  return std::string(name);
}

}  // namespace kreplay::cupti::driver
