// See range_free.hpp.
#include "backends/cuda/range_free.hpp"

#include <cuda.h>

#include <atomic>

#include "backends/cuda/interception.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/range_calls.hpp"
#include "backends/cuda/range_memory.hpp"
#include "common/logging.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::cuda::range_free {
namespace {

std::atomic<unsigned long long> g_seen{0}, g_deferred{0};

/// Whether @p ptr is the start of an allocation the driver knows (anything else goes to the
/// driver, which answers the application as it would without kreplay).
bool allocation_start(CUdeviceptr ptr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  return ptr != 0 && cuMemGetAddressRange(&base, &size, ptr) == CUDA_SUCCESS && base == ptr;
}

}  // namespace

bool free_enter(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (!range_memory::enabled() || !range_calls::range_mode()) return false;
  CUdeviceptr* slot = nullptr;
  CUstream stream = nullptr;
  bool async = false;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: {
      // The parameters are the driver's own: what they say when ENTER returns is what it frees.
      auto* p = const_cast<cuMemFree_v2_params*>(
          static_cast<const cuMemFree_v2_params*>(cb->functionParams));
      slot = &p->dptr;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      auto* p = const_cast<cuMemFreeAsync_params*>(
          static_cast<const cuMemFreeAsync_params*>(cb->functionParams));
      slot = &p->dptr;
      stream = interception::stream_of(p->hStream,
                                       cbid == CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz);
      async = true;
      break;
    }
    default:
      return false;
  }
  CudaDevice* dev = interception::device_of_context(cb->context);
  if (dev == nullptr) return false;
  ++g_seen;
  auto& engine = sdk::Runtime::get().engine();
  const uint64_t agent = dev->agent;
  // No range open on the device: nothing to defer, and no stand-in to make.
  if (replay::DeviceSlot* s = engine.slot(agent);
      s == nullptr || !s->range_open.load(std::memory_order_acquire))
    return false;
  const char* call = cb->functionName;
  const CUdeviceptr ptr = *slot;
  // Not deferred: the range closes before the memory goes, as at every free before.
  auto close = [&] {
    engine.range_barrier(agent, KREPLAY_RANGE_CLOSE_MEMORY, call);
    return false;
  };
  {
    InternalScope internal;
    // Under capture the call makes a free node: the memory goes when the graph runs it.
    if (async && interception::capture_status(stream)) return close();
    if (!allocation_start(ptr)) return close();
  }
  // cudaFree waits for the device: a range whose launches wrote memory the host sees closes
  // here, as at any synchronization.
  if (!async) engine.range_sync(agent, call);
  CUdeviceptr stand_in = 0;
  {
    InternalScope internal;
    const CUresult r = async ? cuMemAllocAsync(&stand_in, 1, stream) : cuMemAlloc(&stand_in, 1);
    if (r != CUDA_SUCCESS) return close();
  }
  const bool deferred = engine.range_defer_free(
      agent, ptr,
      [agent, ptr, async, stream] {
        sdk::Runtime::get().on_free(agent, ptr);
        InternalScope internal;
        const CUresult r = async ? cuMemFreeAsync(ptr, stream) : cuMemFree(ptr);
        if (r != CUDA_SUCCESS)
          KR_WARN("a free deferred to the range's end failed (CUresult {})", static_cast<int>(r));
      },
      call);
  if (!deferred) {  // the range closed instead (or replays nothing): the application's free
    InternalScope internal;
    if (async) {
      cuMemFreeAsync(stand_in, stream);
    } else {
      cuMemFree(stand_in);
    }
    return false;
  }
  ++g_deferred;
  *slot = stand_in;
  return true;
}

Counts counts() { return {g_seen.load(), g_deferred.load()}; }

}  // namespace kreplay::cuda::range_free
