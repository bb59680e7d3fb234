// How kreplay gets into an unmodified CUDA application.
//
//  - CUDA_INJECTION64_PATH=libkreplay_cuda.so: the driver loads the library during cuInit and
//    calls InitializeInjection (default visibility, C linkage).
//  - LD_PRELOAD=libkreplay_cuda.so: the library constructor subscribes before the application's
//    first CUDA call.
//
// Both paths end in start_interception(), which is idempotent. Tools are loaded when the first
// context appears (so they can see the devices): see init_devices() in interceptor.cpp.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "backends/cuda/cuda_backend.hpp"
#include "common/env.hpp"

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  kreplay::cuda::start_interception();
  return 1;  // the driver expects 1 on success; a failure to subscribe is reported, not fatal
}

// NVTX_INJECTION64_PATH=libkreplay_cuda.so: NVTX calls reach CUPTI (and so kreplay's NVTX range
// markers) through CUPTI's own NVTX injection entry, which this forwards to.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(void* get_export_table) {
  using Fn = int (*)(void*);
  void* cupti = dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (cupti == nullptr) cupti = dlopen("libcupti.so", RTLD_NOW | RTLD_GLOBAL);
  if (cupti == nullptr) return 0;
  auto fn = reinterpret_cast<Fn>(dlsym(cupti, "InitializeInjectionNvtx2"));
  return fn ? fn(get_export_table) : 0;
}

namespace {

// LD_PRELOAD: start unless the driver will call InitializeInjection for us anyway.
__attribute__((constructor)) void kreplay_cuda_preload() {
  auto preload = kreplay::env::get("LD_PRELOAD");
  if (!preload || preload->find("libkreplay_cuda") == std::string::npos) return;
  auto inject = kreplay::env::get("CUDA_INJECTION64_PATH");
  if (inject && inject->find("libkreplay_cuda") != std::string::npos) return;
  kreplay::cuda::start_interception();
}

}  // namespace
