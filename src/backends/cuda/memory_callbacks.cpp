// The CUPTI callback's memory half: allocations keep the inventory; frees, unmaps and array
// destructions retire entries before the memory goes, waiting for open windows (memory guards);
// surface-writable arrays mark their device untracked; VMM calls go through the VmmTracker; stream
// captures are noted so that windows are declined while one is in progress.
#include <cupti.h>

#include <algorithm>
#include <map>

#include "backends/cuda/graphs.hpp"
#include "backends/cuda/interception.hpp"
#include "backends/cuda/internal_guard.hpp"
#include "backends/cuda/range_calls.hpp"
#include "backends/cuda/range_free.hpp"
#include "backends/cuda/range_memory.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"

namespace kreplay::cuda::interception {
namespace {

void track(CUcontext ctx, uint64_t address, uint64_t size, kreplay_memory_kind_t kind,
           const char* call = nullptr, CUstream stream = nullptr) {
  CudaDevice* dev = device_of_context(ctx);
  if (dev == nullptr || address == 0 || size == 0) return;
  sdk::Runtime::get().on_allocate(dev->agent, address, size, kind);
  // Device memory allocated while a range is open is part of the range's state from now on
  // (saved as it is now), whichever thread allocated it: launches that join later may write it.
  if (kind != KREPLAY_MEMORY_KIND_DEVICE && kind != KREPLAY_MEMORY_KIND_POOL) return;
  if (!range_memory::enabled()) return;  // allocations close ranges on CUDA unless asked
  // The save is a plain copy (the copy engine), not kreplay's snapshot kernel: the range's counter
  // session of its first pass is open, and CUPTI's auto range would count that kernel as a launch
  // of the range's. A stream-ordered block is the stream's from the allocation's place in it on,
  // so it is read once the stream got there.
  const bool pool = kind == KREPLAY_MEMORY_KIND_POOL;
  sdk::Runtime::get().engine().range_allocated(
      dev->agent, address, size, call,
      [address, size, pool, stream](const device::Storage& storage) -> Status {
        InternalScope internal;
        if (pool) KR_CU(cuStreamSynchronize(stream));
        KR_CU(cuMemcpy(static_cast<CUdeviceptr>(storage.address), static_cast<CUdeviceptr>(address),
                       size));
        return Status::Ok();
      });
}

// ENTER of a device allocation: an open range that takes memory calls stays open (the memory is
// saved at EXIT, track()); any other closes.
void allocation_enter(CUcontext ctx, const char* call) {
  CudaDevice* dev = device_of_context(ctx);
  if (dev != nullptr) sdk::Runtime::get().engine().range_allocation_begin(dev->agent, call);
}

// ENTER of a free: wait for open windows, retire the entry before the memory goes.
void retire(CUcontext ctx, uint64_t address, const CUpti_CallbackData* cb) {
  CudaDevice* dev = device_of_context(ctx);
  if (dev == nullptr) return;
  auto* inflight = new InFlight();  // NOLINT: released at EXIT
  inflight->guard = sdk::Runtime::get().engine().guard_memory(dev->agent);
  sdk::Runtime::get().on_free(dev->agent, address);
  *cb->correlationData = reinterpret_cast<uint64_t>(inflight);
}

// ENTER of an allocation of @p bytes of device memory: kreplay never takes the application's
// memory. When the device is short of it and kreplay holds snapshot storage there, the storage
// goes back first (later windows take what they need again).
void make_room(CUcontext ctx, uint64_t bytes, const char* call) {
  CudaDevice* dev = device_of_context(ctx);
  if (dev == nullptr || bytes == 0) return;
  auto& engine = sdk::Runtime::get().engine();
  kreplay_replay_storage_t held{};
  const bool pool = engine.replay_storage(dev->agent, &held) && held.device_bytes > 0;
  // An open range also holds storage of its own: what it saved of the memory allocated inside it.
  if (!pool && !range_calls::range_mode()) return;
  constexpr uint64_t kSlack = 64ull << 20;  // allocation granularity, the driver's own needs
  if (dev->free_device_bytes() >= bytes + kSlack) return;
  // An open range's entry state lives in that storage: the range closes first (allocations no
  // longer close ranges by themselves), which also gives back what it saved.
  engine.range_barrier(dev->agent, KREPLAY_RANGE_CLOSE_MEMORY, call);
  if (pool) engine.release_storage_for_application(dev->agent);
}

VmmTracker& vmm_tracker(CUdevice dev) {
  auto& s = state();
  auto& t = s.vmm_trackers[dev];
  if (!t) {
    auto sink = std::make_unique<InventorySink>();
    CudaDevice* d = device_of_ordinal(dev);
    sink->agent = d ? d->agent : 0;
    t = std::make_unique<VmmTracker>(*sink);
    s.vmm_sinks[dev] = std::move(sink);
  }
  return *t;
}

// Bytes of an array described by @p d (the base level of a mipmapped one).
uint64_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR& d) {
  uint64_t element = 4;
  switch (d.Format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      element = 1;
      break;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      element = 2;
      break;
    default:
      element = 4;
      break;
  }
  return static_cast<uint64_t>(d.Width) * std::max<size_t>(d.Height, 1) *
         std::max<size_t>(d.Depth, 1) * std::max(d.NumChannels, 1u) * element;
}

// EXIT of an array creation: a surface-writable array is memory kernels may write in place and
// kreplay cannot restore, so the device declines launches while it exists.
void on_array_created(CUcontext ctx, uintptr_t handle, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  if (handle == 0 || d == nullptr || (d->Flags & CUDA_ARRAY3D_SURFACE_LDST) == 0) return;
  CudaDevice* dev = device_of_context(ctx);
  if (dev == nullptr) return;
  uint64_t bytes = array_bytes(*d);
  {
    std::lock_guard lock(state().arrays_mu);
    state().surface_arrays[handle] = {dev, bytes};
  }
  dev->add_untracked(static_cast<int64_t>(bytes));
  KR_WARN_ONCE("surface-array",
               "the application created a surface-writable CUDA array ({}); kreplay cannot save "
               "and restore CUDA arrays, so launches run once, unreplayed, while such an array "
               "exists",
               format_bytes(bytes));
}

void on_array_destroyed(uintptr_t handle) {
  std::pair<CudaDevice*, uint64_t> entry{nullptr, 0};
  {
    std::lock_guard lock(state().arrays_mu);
    auto it = state().surface_arrays.find(handle);
    if (it == state().surface_arrays.end()) return;
    entry = it->second;
    state().surface_arrays.erase(it);
  }
  entry.first->add_untracked(-static_cast<int64_t>(entry.second));
}

}  // namespace

void guard_enter(const CUpti_CallbackData* cb) {
  CudaDevice* dev = device_of_context(cb->context);
  auto& registry = sdk::Runtime::get().registry();
  if (dev == nullptr || (!registry.replay_context() && !registry.range_context())) return;
  auto* inflight = new InFlight();  // NOLINT: released at EXIT
  inflight->guard = sdk::Runtime::get().engine().guard_memory(dev->agent, cb->functionName);
  *cb->correlationData = reinterpret_cast<uint64_t>(inflight);
}

void release_enter_state(const CUpti_CallbackData* cb) {
  auto* inflight = reinterpret_cast<InFlight*>(*cb->correlationData);
  *cb->correlationData = 0;
  if (inflight != nullptr && inflight->on_exit)
    inflight->on_exit(*static_cast<CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS);
  delete inflight;  // NOLINT
}

void memory_callback(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  const bool enter = cb->callbackSite == CUPTI_API_ENTER;
  const bool ok = !enter && *static_cast<CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      auto* p = static_cast<const cuMemAlloc_v2_params*>(cb->functionParams);
      if (enter) {
        make_room(cb->context, p->bytesize, cb->functionName);
        allocation_enter(cb->context, cb->functionName);
      }
      if (ok)
        track(cb->context, *p->dptr, p->bytesize, KREPLAY_MEMORY_KIND_DEVICE, cb->functionName);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      auto* p = static_cast<const cuMemAllocPitch_v2_params*>(cb->functionParams);
      if (enter) {
        make_room(cb->context, p->WidthInBytes * p->Height, cb->functionName);
        allocation_enter(cb->context, cb->functionName);
      }
      if (ok)
        track(cb->context, *p->dptr, *p->pPitch * p->Height, KREPLAY_MEMORY_KIND_DEVICE,
              cb->functionName);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      auto* p = static_cast<const cuMemAllocManaged_params*>(cb->functionParams);
      if (ok) track(cb->context, *p->dptr, p->bytesize, KREPLAY_MEMORY_KIND_MANAGED);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      auto* p = static_cast<const cuMemAllocAsync_params*>(cb->functionParams);
      if (enter) {
        make_room(cb->context, p->bytesize, cb->functionName);
        allocation_enter(cb->context, cb->functionName);
      }
      // Under capture the call makes an allocation node: the graph's launches own that memory.
      // Inside a range the block is saved as it is (track), once its stream got there: a block
      // the range freed is held back until the range ends (range_free.cpp), so this one is not it.
      if (ok && !capture_status(p->hStream))
        track(cb->context, *p->dptr, p->bytesize, KREPLAY_MEMORY_KIND_POOL, cb->functionName,
              stream_of(p->hStream, cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      auto* p = static_cast<const cuMemAllocFromPoolAsync_params*>(cb->functionParams);
      if (enter) {
        make_room(cb->context, p->bytesize, cb->functionName);
        allocation_enter(cb->context, cb->functionName);
      }
      if (ok && !capture_status(p->hStream))
        track(cb->context, *p->dptr, p->bytesize, KREPLAY_MEMORY_KIND_POOL, cb->functionName,
              stream_of(p->hStream, cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2: {
      // Portable and mapped pinned memory: with unified addressing the host address is also the
      // device address, and kernels may write it.
      auto* p = static_cast<const cuMemHostAlloc_params*>(cb->functionParams);
      if (ok)
        track(cb->context, reinterpret_cast<uint64_t>(*p->pp), p->bytesize,
              KREPLAY_MEMORY_KIND_HOST_MAPPED);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2: {
      auto* p = static_cast<const cuArray3DCreate_v2_params*>(cb->functionParams);
      if (ok && p->pHandle)
        on_array_created(cb->context, reinterpret_cast<uintptr_t>(*p->pHandle), p->pAllocateArray);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate: {
      auto* p = static_cast<const cuMipmappedArrayCreate_params*>(cb->functionParams);
      if (ok && p->pHandle)
        on_array_created(cb->context, reinterpret_cast<uintptr_t>(*p->pHandle),
                         p->pMipmappedArrayDesc);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy: {
      auto* p = static_cast<const cuArrayDestroy_params*>(cb->functionParams);
      if (ok) on_array_destroyed(reinterpret_cast<uintptr_t>(p->hArray));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy: {
      auto* p = static_cast<const cuMipmappedArrayDestroy_params*>(cb->functionParams);
      if (ok) on_array_destroyed(reinterpret_cast<uintptr_t>(p->hMipmappedArray));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      auto* p = static_cast<const cuMemAllocHost_v2_params*>(cb->functionParams);
      if (ok)
        track(cb->context, reinterpret_cast<uint64_t>(*p->pp), p->bytesize,
              KREPLAY_MEMORY_KIND_HOST_MAPPED);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
      auto* p = static_cast<const cuMemHostRegister_v2_params*>(cb->functionParams);
      if (ok)
        track(cb->context, reinterpret_cast<uint64_t>(p->p), p->bytesize,
              KREPLAY_MEMORY_KIND_HOST_MAPPED);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: {
      auto* p = static_cast<const cuMemFree_v2_params*>(cb->functionParams);
      if (!enter) {
        release_enter_state(cb);
      } else if (!range_free::free_enter(cbid, cb)) {  // not deferred to the range's end
        retire(cb->context, p->dptr, cb);
      }
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      auto* p = static_cast<const cuMemFreeAsync_params*>(cb->functionParams);
      // Under capture the call makes a free node: the memory goes when the graph runs it.
      if (enter) {
        if (!range_free::free_enter(cbid, cb) && !capture_status(p->hStream))
          retire(cb->context, p->dptr, cb);
      } else {
        release_enter_state(cb);
      }
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost: {
      auto* p = static_cast<const cuMemFreeHost_params*>(cb->functionParams);
      if (enter)
        retire(cb->context, reinterpret_cast<uint64_t>(p->p), cb);
      else
        release_enter_state(cb);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister: {
      auto* p = static_cast<const cuMemHostUnregister_params*>(cb->functionParams);
      if (enter)
        retire(cb->context, reinterpret_cast<uint64_t>(p->p), cb);
      else
        release_enter_state(cb);
      break;
    }
    // ---- VMM ----
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      auto* p = static_cast<const cuMemCreate_params*>(cb->functionParams);
      if (enter) make_room(cb->context, p->size, cb->functionName);
      if (!ok) break;
      CUdevice dev =
          p->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? p->prop->location.id : 0;
      std::lock_guard lock(state().vmm_mu);
      state().vmm_handle_device[*p->handle] = dev;
      vmm_tracker(dev).on_create(*p->handle, p->size);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease: {
      auto* p = static_cast<const cuMemRelease_params*>(cb->functionParams);
      if (!ok) break;
      std::lock_guard lock(state().vmm_mu);
      auto it = state().vmm_handle_device.find(p->handle);
      if (it != state().vmm_handle_device.end()) vmm_tracker(it->second).on_release(p->handle);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      auto* p = static_cast<const cuMemMap_params*>(cb->functionParams);
      if (!ok) break;
      std::lock_guard lock(state().vmm_mu);
      auto it = state().vmm_handle_device.find(p->handle);
      if (it != state().vmm_handle_device.end())
        vmm_tracker(it->second).on_map(p->ptr, p->size, p->offset, p->handle);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess: {
      auto* p = static_cast<const cuMemSetAccess_params*>(cb->functionParams);
      if (!ok) break;
      std::map<CUdevice, bool> writable;
      for (size_t i = 0; i < p->count; ++i) {
        if (p->desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) continue;
        writable[p->desc[i].location.id] |= p->desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      }
      std::lock_guard lock(state().vmm_mu);
      for (auto& [dev, w] : writable) vmm_tracker(dev).on_set_access(p->ptr, p->size, w);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      auto* p = static_cast<const cuMemUnmap_params*>(cb->functionParams);
      if (enter) {
        CudaDevice* dev = device_of_context(cb->context);
        auto* inflight = new InFlight();  // NOLINT: released at EXIT
        if (dev) inflight->guard = sdk::Runtime::get().engine().guard_memory(dev->agent);
        std::lock_guard lock(state().vmm_mu);
        for (auto& [d, t] : state().vmm_trackers) t->on_unmap(p->ptr, p->size);
        *cb->correlationData = reinterpret_cast<uint64_t>(inflight);
      } else {
        release_enter_state(cb);
      }
      break;
    }
    // ---- stream capture: while one is in progress, the device is not synchronized ----
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz: {
      // Every variant's first parameter is the stream.
      CUstream s = *static_cast<const CUstream*>(cb->functionParams);
      CudaDevice* dev = device_of_context(cb->context);
      if (ok && dev) dev->capture_begun(s);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz: {
      CUstream s = *static_cast<const CUstream*>(cb->functionParams);
      CudaDevice* dev = device_of_context(cb->context);
      if (!enter && dev) dev->capture_ended(s);
      break;
    }
    default:
      // An executable graph changed after instantiation (its nodes' parameters, an update, nodes
      // enabled or disabled): its launches are profiled as a whole from now on. Every such call
      // takes the executable graph first.
      if (ok && is_graph_exec_change(cb->functionName)) {
        graph_tracker().on_exec_modified(*static_cast<const CUgraphExec*>(cb->functionParams),
                                         "changed after instantiation");
      }
      break;
  }
}

}  // namespace kreplay::cuda::interception
