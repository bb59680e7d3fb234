// See range_free.hpp.
#include "backends/cuda/range_free.hpp"

#include <cuda.h>

#include <atomic>
#include <cstring>

#include "backends/cuda/interception.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/range_calls.hpp"
#include "backends/cuda/range_memory.hpp"
#include "common/logging.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::cuda::range_free {
namespace {

using FreeFn = CUresult(CUDAAPI*)(CUdeviceptr);
using FreeAsyncFn = CUresult(CUDAAPI*)(CUdeviceptr, CUstream);

// The driver's own entries, as cuGetProcAddress gave them (one per flavour; set once).
std::atomic<FreeFn> g_free{nullptr};
std::atomic<FreeAsyncFn> g_free_async{nullptr};
std::atomic<FreeAsyncFn> g_free_async_ptsz{nullptr};
std::atomic<unsigned long long> g_seen{0}, g_deferred{0};

/// The device whose context is current, when @p ptr is the start of an allocation of it that
/// the driver knows (a pointer it does not know goes to the driver, which says so).
CudaDevice* owner(CUdeviceptr ptr) {
  InternalScope internal;
  CUcontext ctx = nullptr;
  if (ptr == 0 || cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) return nullptr;
  CUdeviceptr base = 0;
  size_t size = 0;
  if (cuMemGetAddressRange(&base, &size, ptr) != CUDA_SUCCESS || base != ptr) return nullptr;
  return interception::device_of_context(ctx);
}

/// Whether the open range of this thread takes the free of @p ptr (then @p release frees it
/// after the range's last pass). A synchronous free first counts as the synchronization it is.
template <typename Release>
bool defer(CUdeviceptr ptr, bool sync, const char* call, Release release) {
  ++g_seen;
  if (!range_memory::enabled() || in_internal_call() || !range_calls::range_mode()) return false;
  CudaDevice* dev = owner(ptr);
  if (dev == nullptr) return false;
  auto& engine = sdk::Runtime::get().engine();
  const uint64_t agent = dev->agent;
  // cudaFree waits for the device: a range whose launches wrote memory the host sees closes
  // here, as at any synchronization.
  if (sync) engine.range_sync(agent, call);
  const bool deferred = engine.range_defer_free(
      agent, ptr,
      [agent, ptr, release] {
        sdk::Runtime::get().on_free(agent, ptr);
        InternalScope internal;
        if (CUresult r = release(); r != CUDA_SUCCESS)
          KR_WARN("a free deferred to the range's end failed (CUresult {})", static_cast<int>(r));
      },
      call);
  if (!deferred) return false;
  ++g_deferred;
  if (sync) {
    // Keep what the application's call promised: the device's work done when it returns.
    InternalScope internal;
    cuCtxSynchronize();
  }
  return true;
}

CUresult CUDAAPI free_wrapper(CUdeviceptr ptr) {
  FreeFn real = g_free.load();
  if (defer(ptr, true, "cuMemFree_v2", [real, ptr] { return real(ptr); })) return CUDA_SUCCESS;
  return real(ptr);
}

template <std::atomic<FreeAsyncFn>* Real>
CUresult CUDAAPI free_async_wrapper(CUdeviceptr ptr, CUstream stream) {
  FreeAsyncFn real = Real->load();
  // A free made while the stream is being captured becomes a graph node: the driver's own.
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  {
    InternalScope internal;
    cuStreamIsCapturing(stream, &capture);
  }
  if (capture == CU_STREAM_CAPTURE_STATUS_NONE &&
      defer(ptr, false, "cuMemFreeAsync", [real, ptr, stream] { return real(ptr, stream); }))
    return CUDA_SUCCESS;
  return real(ptr, stream);
}

/// Hand @p wrapper back in place of @p real, remembering @p real in @p slot (first one wins; a
/// different entry for the same slot is left alone).
template <typename Fn>
void swap_in(std::atomic<Fn>& slot, void** pfn, Fn wrapper) {
  Fn real = reinterpret_cast<Fn>(*pfn);
  if (real == wrapper) return;
  Fn expected = nullptr;
  if (!slot.compare_exchange_strong(expected, real) && expected != real) return;
  *pfn = reinterpret_cast<void*>(wrapper);
}

void wrap(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  if (symbol == nullptr || pfn == nullptr || *pfn == nullptr) return;
  if (std::strcmp(symbol, "cuMemFree") == 0) {
    if (cuda_version >= 3020) swap_in(g_free, pfn, &free_wrapper);  // cuMemFree_v2
  } else if (std::strcmp(symbol, "cuMemFreeAsync") == 0) {
    if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0)
      swap_in(g_free_async_ptsz, pfn, &free_async_wrapper<&g_free_async_ptsz>);
    else
      swap_in(g_free_async, pfn, &free_async_wrapper<&g_free_async>);
  }
}

}  // namespace

bool is_proc_address(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2;
}

void on_proc_address(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (cb->callbackSite != CUPTI_API_EXIT || !range_memory::enabled()) return;
  const auto* ret = static_cast<const CUresult*>(cb->functionReturnValue);
  if (ret != nullptr && *ret != CUDA_SUCCESS) return;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2) {
    const auto* p = static_cast<const cuGetProcAddress_v2_params*>(cb->functionParams);
    if (p->symbolStatus != nullptr && *p->symbolStatus != CU_GET_PROC_ADDRESS_SUCCESS) return;
    wrap(p->symbol, p->pfn, p->cudaVersion, p->flags);
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress) {
    const auto* p = static_cast<const cuGetProcAddress_params*>(cb->functionParams);
    wrap(p->symbol, p->pfn, p->cudaVersion, p->flags);
  }
}

Counts counts() { return {g_seen.load(), g_deferred.load()}; }

}  // namespace kreplay::cuda::range_free
