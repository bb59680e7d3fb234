#include "backends/cuda/cupti/driver_api.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

namespace kreplay::cupti::driver {
namespace {

struct Api {
  Status status;  // why the driver is unusable; OK when every entry point below was resolved
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxPushCurrent) ctx_push_current = nullptr;
  decltype(&::cuCtxPopCurrent) ctx_pop_current = nullptr;
  decltype(&::cuCtxGetDevice) ctx_get_device = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
};

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

template <typename Fn>
Status resolve(GetProcAddress get, const char* name, Fn* out) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = get(name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found);
  if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || fn == nullptr) {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                 fmt::format("the CUDA driver has no {} for CUDA {}.{} (driver too old?)", name,
                             CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10));
  }
  *out = reinterpret_cast<Fn>(fn);
  return Status::Ok();
}

Api load() {
  Api api;
  // RTLD_NOLOAD first: inside a CUDA application the driver is already there.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    api.status = Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                       fmt::format("libcuda.so.1 not found: no NVIDIA driver on this machine ({})",
                                   why ? why : "dlopen failed"));
    return api;
  }
  auto get = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get == nullptr) {
    api.status =
        Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
              "libcuda.so.1 has no cuGetProcAddress_v2: the driver is older than CUDA 12.5");
    return api;
  }
  for (Status s :
       {resolve(get, "cuInit", &api.init), resolve(get, "cuDeviceGetCount", &api.device_get_count),
        resolve(get, "cuCtxGetCurrent", &api.ctx_get_current),
        resolve(get, "cuCtxPushCurrent", &api.ctx_push_current),
        resolve(get, "cuCtxPopCurrent", &api.ctx_pop_current),
        resolve(get, "cuCtxGetDevice", &api.ctx_get_device),
        resolve(get, "cuDeviceGetName", &api.device_get_name),
        resolve(get, "cuGetErrorName", &api.get_error_name),
        resolve(get, "cuGetErrorString", &api.get_error_string)}) {
    if (!s.ok()) {
      api.status = s;
      return api;
    }
  }
  return api;
}

const Api& api() {
  static const Api instance = load();
  return instance;
}

Status call_status(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return Status::Ok();
  kreplay_status_t code = (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH ||
                           r == CUDA_ERROR_NOT_INITIALIZED)
                              ? KREPLAY_STATUS_ERROR_NOT_AVAILABLE
                              : KREPLAY_STATUS_ERROR;
  return Error(code, fmt::format("{} failed: {}", call, error_text(r)));
}

}  // namespace

std::string error_text(CUresult result) {
  const Api& a = api();
  const char* name = nullptr;
  const char* text = nullptr;
  if (a.status.ok()) {
    a.get_error_name(result, &name);
    a.get_error_string(result, &text);
  }
  if (name == nullptr) return fmt::format("CUresult {}", static_cast<int>(result));
  return text ? fmt::format("{} ({})", name, text) : std::string(name);
}

Status init() {
  const Api& a = api();
  RETURN_IF_ERROR(a.status);
  static const Status initialized = call_status(a.init(0), "cuInit");
  return initialized;
}

Result<int> device_count() {
  RETURN_IF_ERROR(init());
  int count = 0;
  RETURN_IF_ERROR(call_status(api().device_get_count(&count), "cuDeviceGetCount"));
  return count;
}

Result<CUcontext> current_context() {
  RETURN_IF_ERROR(init());
  CUcontext ctx = nullptr;
  RETURN_IF_ERROR(call_status(api().ctx_get_current(&ctx), "cuCtxGetCurrent"));
  return ctx;
}

Result<CUdevice> context_device(CUcontext ctx) {
  RETURN_IF_ERROR(init());
  if (ctx == nullptr) return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "no CUDA context");
  const Api& a = api();
  RETURN_IF_ERROR(call_status(a.ctx_push_current(ctx), "cuCtxPushCurrent"));
  CUdevice device = 0;
  CUresult r = a.ctx_get_device(&device);
  CUcontext popped = nullptr;
  CUresult pop = a.ctx_pop_current(&popped);
  RETURN_IF_ERROR(call_status(r, "cuCtxGetDevice"));
  RETURN_IF_ERROR(call_status(pop, "cuCtxPopCurrent"));
  return device;
}

Result<std::string> device_name(CUdevice device) {
  RETURN_IF_ERROR(init());
  char name[256] = {};
  RETURN_IF_ERROR(
      call_status(api().device_get_name(name, sizeof(name) - 1, device), "cuDeviceGetName"));
  return std::string(name);
}

}  // namespace kreplay::cupti::driver
