#include "backends/cuda/memory/driver.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

namespace kreplay::cuda::memdrv {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

struct Loaded {
  Status status;  // why the driver is unusable; OK when every entry point was resolved
  Driver table;
};

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

Loaded load() {
  Loaded l;
  // RTLD_NOLOAD first: inside a CUDA application the driver is already there.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    l.status = Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                     fmt::format("libcuda.so.1 not found: no NVIDIA driver on this machine ({})",
                                 why ? why : "dlopen failed"));
    return l;
  }
  auto get = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get == nullptr) {
    l.status = Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                     "libcuda.so.1 has no cuGetProcAddress_v2: the driver is older than CUDA 12.5");
    return l;
  }
  // #name is the cuda.h spelling (not macro-expanded); l.table.name is the _v2 member.
#define KR_MEMDRV_RESOLVE(name)                                   \
  if (l.status.ok()) {                                            \
    if (Status s = resolve(get, #name, &l.table.name); !s.ok()) { \
      l.status = s;                                               \
    }                                                             \
  }
  KR_MEMDRV_FUNCTIONS(KR_MEMDRV_RESOLVE)
#undef KR_MEMDRV_RESOLVE
  if (!l.status.ok()) return l;
  CUresult r = l.table.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    l.table.cuGetErrorName(r, &name);
    l.status = Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                     fmt::format("cuInit failed: {}", name ? name : std::to_string(r)));
  }
  return l;
}

const Loaded& loaded() {
  static const Loaded instance = load();
  return instance;
}

}  // namespace

Status init() {
  return loaded().status;
}

const Driver& api() {
  const Loaded& l = loaded();
  KR_CHECK_MSG(l.status.ok(), "the CUDA driver table is used before memdrv::init() succeeded");
  return l.table;
}

std::string error_text(CUresult result) {
  const Loaded& l = loaded();
  const char* name = nullptr;
  const char* text = nullptr;
  if (l.table.cuGetErrorName != nullptr) l.table.cuGetErrorName(result, &name);
  if (l.table.cuGetErrorString != nullptr) l.table.cuGetErrorString(result, &text);
  if (name == nullptr) return fmt::format("CUresult {}", static_cast<int>(result));
  return text ? fmt::format("{} ({})", name, text) : std::string(name);
}

Status check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return Status::Ok();
  kreplay_status_t code = KREPLAY_STATUS_ERROR;
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    code = KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES;
  } else if (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_NOT_INITIALIZED ||
             result == CUDA_ERROR_DEINITIALIZED || result == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) {
    code = KREPLAY_STATUS_ERROR_NOT_AVAILABLE;
  }
  return Error(code, fmt::format("{} failed: {}", what, error_text(result)));
}

}  // namespace kreplay::cuda::memdrv
