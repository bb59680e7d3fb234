// free_probe_inject: the injection half of free_probe (issue 30 item 3 on CUDA). Can kreplay,
// loaded as CUDA_INJECTION64_PATH, hold an application's free back until a range's passes end?
// CUPTI's callbacks cannot skip a driver call, so this asks two other ways, and says what it saw:
//   1. cuGetProcAddress: does the runtime resolve cuMemFree_v2 / cuMemFreeAsync through
//      cuGetProcAddress after the injection subscribed (then the exit callback can hand back a
//      wrapper that defers the free)? FREE_PROBE_WRAP=1 hands back the wrapper; it counts the
//      frees it saw and, with FREE_PROBE_DEFER=1, frees nothing until the process exits.
//   2. Parameters: does the driver use a pointer that the enter callback changed? With
//      FREE_PROBE_SWAP=1 the enter callback of cuMemFree_v2 puts a fresh 1 MiB block of its own in
//      place of the application's pointer; if the driver honours it, the application's block
//      stays allocated (the app checks with cuMemGetAddressRange) and the probe's block is gone.
// Prints `free_probe inject ...` lines. A probe, not a test: it asserts nothing.
#include <cuda.h>
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using MemFreeFn = CUresult (*)(CUdeviceptr);
using MemFreeAsyncFn = CUresult (*)(CUdeviceptr, CUstream);

MemFreeFn g_real_free = nullptr;
MemFreeAsyncFn g_real_free_async = nullptr;
std::atomic<int> g_wrapped_frees{0};
std::atomic<int> g_wrapped_async_frees{0};
std::atomic<int> g_lookups{0};
std::atomic<int> g_swaps{0};
bool g_initialized = false;  // cuInit's exit seen
CUdeviceptr g_swapped_in = 0;

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, "1") == 0;
}

CUresult wrapped_free(CUdeviceptr p) {
  ++g_wrapped_frees;
  std::printf("free_probe inject wrapper cuMemFree_v2 ptr=0x%llx%s\n",
              static_cast<unsigned long long>(p), env_on("FREE_PROBE_DEFER") ? " deferred" : "");
  if (env_on("FREE_PROBE_DEFER")) return CUDA_SUCCESS;
  return g_real_free(p);
}

CUresult wrapped_free_async(CUdeviceptr p, CUstream s) {
  ++g_wrapped_async_frees;
  std::printf("free_probe inject wrapper cuMemFreeAsync ptr=0x%llx%s\n",
              static_cast<unsigned long long>(p), env_on("FREE_PROBE_DEFER") ? " deferred" : "");
  if (env_on("FREE_PROBE_DEFER")) return CUDA_SUCCESS;
  return g_real_free_async(p, s);
}

void wrap(const char* symbol, void** pfn, const char* via) {
  ++g_lookups;
  if (symbol == nullptr || pfn == nullptr || *pfn == nullptr) return;
  const bool is_free = std::strcmp(symbol, "cuMemFree") == 0;
  const bool is_async = std::strcmp(symbol, "cuMemFreeAsync") == 0;
  if (!is_free && !is_async) return;
  std::printf("free_probe inject %s symbol=%s after_cuInit=%d\n", via, symbol, g_initialized ? 1 : 0);
  if (!env_on("FREE_PROBE_WRAP")) return;
  if (is_free) {
    g_real_free = reinterpret_cast<MemFreeFn>(*pfn);
    *pfn = reinterpret_cast<void*>(&wrapped_free);
  } else {
    g_real_free_async = reinterpret_cast<MemFreeAsyncFn>(*pfn);
    *pfn = reinterpret_cast<void*>(&wrapped_free_async);
  }
}

void CUPTIAPI on_driver(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuInit && cb->callbackSite == CUPTI_API_EXIT) {
    g_initialized = true;
    return;
  }
  if (cb->callbackSite == CUPTI_API_EXIT && cbid == CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2) {
    const auto* p = static_cast<const cuGetProcAddress_v2_params*>(cb->functionParams);
    wrap(p->symbol, p->pfn, "cuGetProcAddress_v2");
    return;
  }
  if (cb->callbackSite == CUPTI_API_EXIT && cbid == CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress) {
    const auto* p = static_cast<const cuGetProcAddress_params*>(cb->functionParams);
    wrap(p->symbol, p->pfn, "cuGetProcAddress");
    return;
  }
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2 && cb->callbackSite == CUPTI_API_ENTER) {
    auto* p = const_cast<cuMemFree_v2_params*>(static_cast<const cuMemFree_v2_params*>(cb->functionParams));
    std::printf("free_probe inject callback cuMemFree_v2 ptr=0x%llx\n",
                static_cast<unsigned long long>(p->dptr));
    if (env_on("FREE_PROBE_SWAP") && g_swaps.load() == 0) {
      CUdeviceptr mine = 0;
      // A nested driver call from inside the callback: its own callbacks come (and are ignored
      // here, the swap being done once).
      ++g_swaps;
      if (cuMemAlloc(&mine, 1 << 20) == CUDA_SUCCESS) {
        g_swapped_in = mine;
        std::printf("free_probe inject swap app=0x%llx probe=0x%llx\n",
                    static_cast<unsigned long long>(p->dptr), static_cast<unsigned long long>(mine));
        p->dptr = mine;
      }
    }
  }
}

void report() {
  std::printf("free_probe inject summary lookups=%d wrapped_frees=%d wrapped_async_frees=%d swaps=%d\n",
              g_lookups.load(), g_wrapped_frees.load(), g_wrapped_async_frees.load(), g_swaps.load());
  if (g_swapped_in != 0) {
    CUdeviceptr base = 0;
    size_t size = 0;
    const CUresult r = cuMemGetAddressRange(&base, &size, g_swapped_in);
    std::printf("free_probe inject probe_block_after=%s (CUresult %d)\n",
                r == CUDA_SUCCESS ? "allocated" : "freed", static_cast<int>(r));
  }
  std::fflush(stdout);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  CUpti_SubscriberHandle sub = nullptr;
  if (cuptiSubscribe(&sub, on_driver, nullptr) != CUPTI_SUCCESS) {
    std::printf("free_probe inject subscribe=FAIL\n");
    return 0;
  }
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuInit);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2);
  std::atexit(report);
  std::printf("free_probe inject subscribed wrap=%d defer=%d swap=%d\n", env_on("FREE_PROBE_WRAP"),
              env_on("FREE_PROBE_DEFER"), env_on("FREE_PROBE_SWAP"));
  return 1;
}
