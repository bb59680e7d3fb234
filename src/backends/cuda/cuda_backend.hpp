// The CUDA backend: a device::Device per GPU and a device::Launch per intercepted launch, fed by
// CUPTI callbacks (interceptor.cpp) in an injected library (injection.cpp).
//
// Threading: launches are handled synchronously on the thread that calls the CUDA API (inside the
// CUPTI callback); a CudaLaunch lives from the API's ENTER callback to its EXIT callback.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "kreplay/services.h"

namespace kreplay::cuda {

class MemoryOps;
struct ExecGraph;

/// "cuXxx failed: CUDA_ERROR_YYY (message)".
Status cu_error(CUresult r, const char* what);

#define KR_CU(call)                                                              \
  do {                                                                           \
    CUresult kr_cu_ = (call);                                                    \
    if (kr_cu_ != CUDA_SUCCESS) return ::kreplay::cuda::cu_error(kr_cu_, #call); \
  } while (0)

class CudaDevice final : public device::Device {
 public:
  CudaDevice(CUdevice dev, int ordinal);
  ~CudaDevice() override;

  const device::AgentDesc& desc() const override { return desc_; }
  Status drain(uint64_t timeout_ms) override;
  /// --cache-control all: MemoryOps::flush_caches (a read of 2x the L2 size, completed on return).
  Status flush_caches() override;
  uint64_t storage_available(device::StorageTier tier) override;
  /// Free device memory now (cuMemGetInfo; 0 on error).
  uint64_t free_device_bytes();
  Result<device::Storage> allocate_storage(device::StorageTier tier, uint64_t bytes) override;
  void free_storage(const device::Storage& storage) override;
  Status snapshot(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                  std::span<uint64_t> digests) override;
  Status find_changed(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                      std::span<const uint64_t> digests, std::vector<uint64_t>* changed) override;
  Status restore(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                 std::span<const uint64_t> chunks) override;
  /// --check-divergence: MemoryOps::digest_live (the snapshot's digest kernel without the copy).
  /// Write-bounded snapshots: MemoryOps::digest_baseline / changed_since_baseline.
  Status digest_baseline(std::span<const device::CopyRegion> regions,
                         uint64_t chunk_bytes) override;
  Status changed_since_baseline(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                                bool update, std::vector<uint64_t>* changed,
                                std::vector<uint64_t>* was_zero) override;
  Status zero_chunks(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                     std::span<const uint64_t> chunks) override;
  Status digest_live(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                     std::span<uint64_t> digests) override;
  /// The device heap: a CUPTI checkpoint of the launch's context (device_heap.cpp).
  Result<uint64_t> save_heap() override;
  Result<uint64_t> restore_heap() override;
  void drop_heap() override;
  std::shared_ptr<void> bind_launch_context(device::Launch& launch) override;
  bool thread_stream(uint64_t stream) const override {
    return stream == reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD);
  }
  device::CounterBackend* counters() override { return counters_; }
  /// PC sampling, SASS metrics and PM sampling through CUPTI (services/), created on first use.
  device::PassService* service(int kind) override;
  /// Memory kernels can write that kreplay cannot save and restore: surface-writable CUDA arrays
  /// (kernels write them through surf*write; arrays are not linear device memory). While any
  /// exists, launches are declined (Options::decline_untracked).
  uint64_t untracked_bytes() override {
    int64_t v = untracked_.load(std::memory_order_relaxed);
    return v > 0 ? static_cast<uint64_t>(v) : 0;
  }
  void add_untracked(int64_t bytes) { untracked_.fetch_add(bytes, std::memory_order_relaxed); }
  /// Stream captures in progress on the device: while one is, kreplay neither synchronizes nor
  /// queries streams (that would invalidate the capture), so windows are declined.
  bool capture_active() override;
  void capture_begun(CUstream s);
  void capture_ended(CUstream s);

  void set_counters(device::CounterBackend* c) { counters_ = c; }
  /// One launch of a tiny kernel of kreplay's own (MemoryOps::tiny_launch), completed on return,
  /// for the counters' warm start. NOT_AVAILABLE when kreplay's kernels live in another context
  /// of the device than @p ctx.
  Status tiny_launch(CUcontext ctx);
  /// Whether kreplay's own kernels (the cache flush's, tiny_launch's) run in @p ctx.
  bool own_kernels_in(CUcontext ctx);
  /// The counters are about to begin on @p ctx (a pass, a range's pass, their warm start), or PM
  /// sampling on the device (@p ctx nullptr: every context): the per-pass services that stay
  /// enabled next to them get the context ready first (CUDA PC sampling after one of its passes
  /// or a module load: services/pc_sampling.cpp).
  void ready_for_profiling(CUcontext ctx);
  void set_chip(const std::string& chip) { desc_.chip = chip; }

  /// Streams that have carried work on this device (for drain).
  void note_stream(CUstream s);
  void forget_stream(CUstream s);

  CUdevice cu_device() const { return dev_; }
  uint64_t agent = 0;

 private:
  Result<MemoryOps*> ops();

  CUdevice dev_;
  device::AgentDesc desc_;
  std::mutex ops_mu_;
  std::unique_ptr<MemoryOps> ops_;
  std::shared_mutex streams_mu_;
  std::set<CUstream> streams_;
  device::CounterBackend* counters_ = nullptr;
  std::mutex services_mu_;
  std::array<std::unique_ptr<device::PassService>, KREPLAY_PASS_SERVICE_LAST> services_;
  std::atomic<int64_t> untracked_{0};
  std::mutex captures_mu_;
  std::set<CUstream> capturing_;
  std::atomic<bool> any_capture_{false};
  std::mutex heap_mu_;
  std::shared_ptr<struct HeapCheckpoint> heap_;  ///< guarded by heap_mu_ (device_heap.cpp)
  /// Contexts whose device heap a launch has set up (device_heap.cpp), guarded by heap_mu_.
  std::vector<CUcontext> heap_contexts_;
};

/// Which API the application used, so passes > 0 are submitted the same way.
enum class LaunchApi { kKernel, kKernelEx, kCooperative, kGraph };

class CudaLaunch final : public device::Launch {
 public:
  ~CudaLaunch() override;
  const device::LaunchInfo& info() const override { return info_; }
  Status relaunch() override;
  Status wait(uint64_t timeout_ms, device::PassTiming* timing) override;
  std::unique_ptr<device::Launch> record() override;
  bool recordable() const override;
  uint64_t context_key() const override { return reinterpret_cast<uint64_t>(ctx); }
  const device::GraphInfo* graph() const override {
    return api == LaunchApi::kGraph ? &graph_info : nullptr;
  }
  Result<std::vector<device::GraphStep>> decompose() override;
  Status wait_stream(uint64_t timeout_ms) override;

  /// Record the event that marks the start of a submission (before it), and its end (after).
  void record_start();
  void record_end();
  /// Point the parameters at this launch's own argument bytes (`args`, laid out by
  /// `param_layout`, or one buffer when `args_buffer`), so it can be submitted on its own.
  void own_arguments();
  /// cuLaunchKernelEx with these attributes (a graph's kernel node with a cluster or cooperative).
  void set_launch_attributes(const unsigned cluster[3], bool cooperative);

  device::LaunchInfo info_;
  LaunchApi api = LaunchApi::kKernel;
  CUfunction f = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
  void** params = nullptr;
  void** extra = nullptr;
  const CUlaunchConfig* config = nullptr;
  CUgraphExec graph_exec = nullptr;
  std::shared_ptr<const ExecGraph>
      exec_graph;                ///< what the walk of `graph_exec` found (graphs.hpp)
  device::GraphInfo graph_info;  ///< for the engine (graph())
  bool capturing = false;        ///< the stream is under capture: nothing executes, no events
  std::vector<std::byte> args;
  bool args_complete = false;  ///< args holds every parameter (recordable)
  bool args_buffer = false;    ///< the application passed CU_LAUNCH_PARAM_BUFFER_POINTER
  std::vector<std::pair<size_t, size_t>> param_layout;  ///< (offset, size) per parameter
  CudaDevice* device = nullptr;
  CUcontext ctx = nullptr;  ///< the context it was launched in (Device::bind_launch_context)

  // Counter collection state of this dispatch (see cuda_counters.hpp).
  const void* counter_set = nullptr;
  bool counter_started = false;
  bool counter_collection_done = false;

 private:
  CUevent start_ = nullptr, end_ = nullptr;
  bool timed_ = false;
  // A recorded copy owns what its pointers point at.
  std::vector<void*> own_params_;
  std::vector<void*> own_extra_;
  size_t own_args_size_ = 0;
  CUlaunchConfig own_config_{};
  std::vector<CUlaunchAttribute> own_attrs_;
};

/// Start kreplay's CUDA side: subscribe to CUPTI and enable the callbacks. Idempotent. Returns
/// false (after one clear line) when CUPTI is already held by another tool.
bool start_interception();

/// Fill @p l's LaunchInfo for its function `f` (kernel id, names, registers, flags, argument
/// bytes), as for an intercepted launch (interceptor.cpp).
void describe_kernel_launch(CudaLaunch& l);

}  // namespace kreplay::cuda
