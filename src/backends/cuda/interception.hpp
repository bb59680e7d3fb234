// What the CUPTI callback's parts share (interceptor.cpp, kernels.cpp, memory_callbacks.cpp): the
// interception state, the in-flight record handed from ENTER to EXIT, and the lookups of devices
// and streams. Internal to the CUDA backend.
#pragma once

#include <cupti.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/cuda_counters.hpp"
#include "backends/cuda/cupti/range_profiler.hpp"
#include "backends/cuda/module_symbols.hpp"
#include "backends/cuda/vmm_tracker.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::cuda::interception {

// ---- state ------------------------------------------------------------------------------------

struct FuncInfo {
  std::vector<std::pair<size_t, size_t>> params;  // (offset, size)
  size_t arg_bytes = 0;
  bool params_known = false;
  uint32_t registers = 0;
  uint32_t static_shared = 0;
  uint64_t kernel_id = 0;
  const sdk::KernelEntry* entry = nullptr;
};

struct LoadedModule {
  uint64_t code_object = 0;
  uint64_t agent = 0;
  ModuleSymbols symbols;
  std::vector<uint64_t> globals;  // addresses registered from this module
};

class InventorySink final : public VmmSink {
 public:
  uint64_t agent = 0;
  uint64_t add_region(uint64_t va, uint64_t size) override {
    return sdk::Runtime::get().on_allocate(agent, va, size, KREPLAY_MEMORY_KIND_VIRTUAL);
  }
  void add_alias(uint64_t region, uint64_t va, uint64_t size) override {
    sdk::Runtime::get().inventory().add_alias(region, va, size);
  }
  void remove(uint64_t va) override { sdk::Runtime::get().on_free(agent, va); }
};

struct State {
  CUpti_SubscriberHandle subscriber = nullptr;
  std::once_flag devices_once;
  std::vector<std::unique_ptr<CudaDevice>> devices;  // by ordinal; written once
  std::vector<std::unique_ptr<CudaCounterBackend>> counter_backends;

  std::shared_mutex mu;  // guards the maps below
  std::unordered_map<CUfunction, std::unique_ptr<FuncInfo>> funcs;
  std::unordered_map<CUcontext, CudaDevice*> contexts;
  std::map<uint32_t, LoadedModule> modules;            // CUPTI module id → module
  std::unordered_map<std::string, uint64_t> kernel_ids;  // mangled → kernel id
  std::unordered_map<uintptr_t, bool> scanned_modules;   // CUmodule/CUlibrary → globals scanned
  std::unordered_set<uintptr_t> preloaded_modules;      // CUmodule/CUlibrary → all functions loaded
  std::map<uint64_t, CUdevice> vmm_handle_device;         // VMM handle → device

  std::mutex vmm_mu;
  std::map<CUdevice, std::unique_ptr<InventorySink>> vmm_sinks;
  std::map<CUdevice, std::unique_ptr<VmmTracker>> vmm_trackers;


  // Surface-writable CUDA arrays (CUarray or CUmipmappedArray handle) -> device and bytes.
  std::mutex arrays_mu;
  std::map<uintptr_t, std::pair<CudaDevice*, uint64_t>> surface_arrays;

  // Start-up costs (KREPLAY_PRINT_COSTS): subscribing, enabling callbacks, devices + tools.
  double subscribe_ms = 0, callbacks_ms = 0, devices_ms = 0;
  double modules_ms = 0;  // module-load callbacks (symbol tables read for __device__ globals)
  uint64_t modules_loaded = 0;
};

// In-flight launches and memory guards, handed from ENTER to EXIT through CUPTI's
// correlationData slot (a pointer-sized value shared by the two callbacks of one API call).
struct InFlight {
  std::unique_ptr<CudaLaunch> launch;
  replay::DispatchState* st = nullptr;
  replay::Engine::MemoryGuard guard;
  CudaDevice* device = nullptr;
  /// A memory call that joined an open range (range_memory.cpp): called at EXIT by
  /// release_enter_state with whether the call succeeded.
  std::function<void(bool ok)> on_exit;
};

/// The process's interception state (never destroyed).
State& state();

CudaDevice* device_of_ordinal(CUdevice dev);
/// The device of @p ctx (the current context when null), or null when it is not one of ours.
CudaDevice* device_of_context(CUcontext ctx);

/// Whether @p stream is capturing into a graph.
bool capture_status(CUstream stream);
/// The stream a driver call names: in a per-thread-stream call (`_ptsz`) the default stream
/// means the calling thread's default stream.
inline CUstream stream_of(CUstream stream, bool per_thread) {
  return per_thread && stream == nullptr ? CU_STREAM_PER_THREAD : stream;
}
/// Whether a driver call of this name changes an executable graph after instantiation.
bool is_graph_exec_change(const char* name);

/// kernels.cpp: the kernel id of @p mangled on @p agent (registered with the SDK once).
uint64_t kernel_id_for(uint64_t agent, const std::string& mangled);
/// kernels.cpp: CUPTI's module load and unload events (symbol tables, code objects, variables).
void on_module_loaded(CUcontext ctx, const CUpti_ModuleResourceData* m);
void on_module_unloading(const CUpti_ModuleResourceData* m);
/// kernels.cpp: what kreplay knows of @p f (named @p symbol when known), learned at its first
/// sight, which closes the open range where that launch loads code or makes variables tracked.
FuncInfo* func_info(CudaDevice* dev, CUfunction f, const char* symbol);

/// Allocation, free, array, VMM and capture calls: the inventory and the memory guards.
void memory_callback(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
/// KREPLAY_PRINT_COSTS=1: the cost lines, at exit (interceptor_costs.cpp).
void print_costs();
/// ENTER of a copy or memset while a replay or range context exists: wait for open windows.
void guard_enter(const CUpti_CallbackData* cb);
/// EXIT of a guarded call: release what its ENTER left in correlationData.
void release_enter_state(const CUpti_CallbackData* cb);

}  // namespace kreplay::cuda::interception
