// The host device runtime: a GPU-free device with memory, streams, modules and kernels, driven by
// the same replay engine and SDK paths as a real GPU. Test applications use it like the CUDA
// runtime; the whole SDK, engine, tool, CLI and writers are tested on it without a GPU.
//
//   hostrt::init();                                   // optional: lazily done by any call
//   auto mod = hostrt::load_module({"m", {{"_Z5scalePfi", scale, {8, 4}}}, {{"counter", 4}}});
//   float* x = static_cast<float*>(*hostrt::malloc(n * sizeof(float)));
//   hostrt::launch(*hostrt::get_kernel(*mod, "_Z5scalePfi"), {n / 64}, {64},
//                  hostrt::default_stream(), x, n);
//   hostrt::stream_synchronize(hostrt::default_stream());
//
// Kernels are plain functions called once per thread with a ThreadContext. Memory they touch
// through ThreadContext::load/store/atomic_add is counted (bytes_read, bytes_written), so counter
// values are what the kernel really did. Each stream runs its work in order on a worker thread;
// streams run concurrently. All functions are thread-safe.
//
// Environment (read by the lazy init): KREPLAY_HOST_DEVICES (1), KREPLAY_HOST_MEMORY (1G, device
// memory per device), KREPLAY_HOST_PINNED (1G, pinned host memory available for snapshots),
// KREPLAY_HOST_COUNTERS_PER_PASS (2), KREPLAY_HOST_FAIL_COUNTER_PASSES (0: the first N counter
// passes fail to start, to test how losses are reported).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.hpp"

namespace kreplay::hostrt {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

struct Config {
  int device_count = 1;
  uint64_t memory_bytes = 1ull << 30;  ///< device memory per device
  uint64_t pinned_bytes = 1ull << 30;  ///< pinned host memory for snapshot storage
  uint32_t counters_per_pass = 2;      ///< hardware counter limit of one pass
};

/// Initialize with @p config (before any other call; later calls with a different config fail).
/// Registers the devices with the SDK and loads the tools.
Status init(const Config& config);
/// Initialize from the environment if not done yet.
Status init();
const Config& config();

using Stream = uint64_t;  ///< 0 is never a stream
using Module = uint64_t;
using Kernel = uint64_t;
using Graph = uint64_t;
using Event = uint64_t;  ///< 0 is never an event

// ---- memory ----
Result<void*> malloc(size_t bytes, int device = 0);
Status free(void* ptr);
/// Host memory the device can read and write (like cudaMallocHost): tracked as mapped host memory;
/// a launch whose arguments point into it may wait for the host.
Result<void*> malloc_host_mapped(size_t bytes, int device = 0);
/// Managed memory (like cudaMallocManaged): tracked as managed; the host may read and write it
/// with no call, so ranges on its device close at every synchronization.
Result<void*> malloc_managed(size_t bytes, int device = 0);
/// Memory the replay inventory does not see (simulates memory kreplay cannot track). Its presence
/// makes replay decline with UNTRACKED_MEMORY while it lives.
Result<void*> malloc_untracked(size_t bytes, int device = 0);
/// Synchronous copy/set: wait for the device, then copy. Waits while a replay window is open.
Status memcpy(void* dst, const void* src, size_t bytes);
Status memset(void* dst, int value, size_t bytes);
/// Asynchronous on @p stream. From host memory hostrt did not allocate (pageable memory) the
/// source bytes are staged when the call is made, as CUDA does: the host may reuse its buffer as
/// soon as the call returns.
Status memcpy_async(void* dst, const void* src, size_t bytes, Stream stream);
Status memset_async(void* dst, int value, size_t bytes, Stream stream);
/// Stream-ordered allocation (like cudaMallocAsync): takes a block of the same size that
/// free_async gave back on @p stream at once, or on another stream once that stream reached the
/// free; else new memory. Tracked as pool memory. The block's bytes are as its last user left them.
Result<void*> malloc_async(size_t bytes, Stream stream);
/// Stream-ordered free (like cudaFreeAsync): the block goes back to the pool (not to the system).
Status free_async(void* ptr, Stream stream);

// ---- streams ----
Stream default_stream(int device = 0);
/// Device 0's stream of the calling thread, like CUDA's per-thread default stream: one handle that
/// names a different stream on each thread (created on the thread's first use).
inline constexpr Stream kPerThreadStream = ~Stream{0} - 1;
Result<Stream> stream_create(int device = 0);
Status stream_destroy(Stream stream);
Status stream_synchronize(Stream stream);
Status device_synchronize(int device = 0);
// ---- events (like cudaEvent_t) ----
Result<Event> event_create(int device = 0);
Status event_destroy(Event event);
/// Marks the point @p stream's work has reached when the event completes.
Status event_record(Event event, Stream stream);
/// Work submitted to @p stream later waits until @p event's last recorded point completes.
Status stream_wait_event(Stream stream, Event event);
/// Waits on the host until @p event's last recorded point completes.
Status event_synchronize(Event event);
/// Stream capture: launches into a capturing stream are recorded into a graph, not executed
/// (they are not dispatches: the graph's launches are).
Status stream_begin_capture(Stream stream);
Result<Graph> stream_end_capture(Stream stream);

// ---- graphs (like CUDA graphs: nodes run in the order they were added) ----
Result<Graph> graph_create();
/// A kernel node (parameters as for launch(); their bytes are copied).
Status graph_add_kernel(Graph graph, Kernel kernel, Dim3 grid, Dim3 block, void* const* params);
/// A copy node.
Status graph_add_memcpy(Graph graph, void* dst, const void* src, size_t bytes);
/// A host-function node: fn(data) runs on the stream when the graph gets there. A graph with one
/// cannot be replayed (its host code would run once per pass).
Status graph_add_host(Graph graph, void (*fn)(void*), void* data);
/// A conditional (IF) node: @p body runs when *flag != 0 when the graph gets there. Its kernel
/// nodes cannot be run one at a time: such a graph is profiled as a whole.
Status graph_add_conditional(Graph graph, Graph body, const uint32_t* flag);
/// A memory-allocation node: @p bytes the graph owns, at an address fixed when the node is added
/// (returned), valid from the node on in each launch, as on CUDA. Without a free node in the same
/// graph, the allocation outlives the launch until a graph's free node frees it.
Result<void*> graph_add_mem_alloc(Graph graph, size_t bytes);
/// A memory-free node: frees @p ptr, an allocation of a memory-allocation node.
Status graph_add_mem_free(Graph graph, void* ptr);
/// Launch a graph on @p stream (asynchronous).
Status graph_launch(Graph graph, Stream stream);

// ---- kernels ----
class ThreadContext;
using KernelFn = void (*)(ThreadContext&);

struct KernelDesc {
  std::string mangled_name;
  KernelFn fn = nullptr;
  std::vector<uint32_t> param_sizes;  ///< bytes of each parameter, in order
};
struct GlobalDesc {
  std::string name;
  size_t size = 0;
  std::vector<uint8_t> init;  ///< initial bytes (zero-filled when shorter than size)
};
struct ModuleDesc {
  std::string name;
  std::vector<KernelDesc> kernels;
  std::vector<GlobalDesc> globals;
  /// The module's code uses a device-side heap (as CUDA device malloc/free/new/delete): its
  /// kernels carry KREPLAY_DISPATCH_FLAG_DEVICE_HEAP and are not replayed.
  bool uses_device_heap = false;
  /// As under CUDA_MODULE_LOADING=LAZY: the module is loaded into the device, and its variables
  /// come to exist, at the first launch of one of its kernels (or get_global), not here.
  bool lazy = false;
};

Result<Module> load_module(const ModuleDesc& desc, int device = 0);
Status unload_module(Module module);
/// By mangled name (or its demangled form).
Result<Kernel> get_kernel(Module module, std::string_view name);
/// Device address of a module-scope variable.
Result<void*> get_global(Module module, std::string_view name);

/// Launch like cuLaunchKernel: @p params[i] points at parameter i (sizes from the KernelDesc).
/// Asynchronous; errors for a bad configuration are returned after the engine saw the launch.
Status launch(Kernel kernel, Dim3 grid, Dim3 block, Stream stream, void* const* params);

template <typename... Args>
Status launch_args(Kernel kernel, Dim3 grid, Dim3 block, Stream stream, Args... args) {
  void* params[] = {static_cast<void*>(&args)..., nullptr};
  return launch(kernel, grid, block, stream, params);
}

class Probe;  // backends/host/services/probe.hpp

/// What a ThreadContext call does, as the host device's per-pass services see it (one
/// "instruction" per call site: services/probe.hpp).
enum class ProbeOp : uint8_t { kLoad, kStore, kAtomic, kOps };

/// What a kernel sees for one thread.
///
/// Each call of load/store/atomic_add/count_ops is an instruction at its call site (the
/// source_location the default argument captures): the host device's PC sampling, SASS metrics
/// and PM sampling count per call site, so their records name the kernel's own source lines.
class ThreadContext {
 public:
  using Where = std::source_location;
  Dim3 block_idx, thread_idx, grid_dim, block_dim;

  /// Parameter @p i (its bytes reinterpreted as T).
  template <typename T>
  T arg(size_t i) const {
    T v{};
    std::memcpy(&v, args_ + offsets_[i], sizeof(T));
    return v;
  }
  template <typename T>
  T load(const T* p, Where at = Where::current()) {
    bytes_read_ += sizeof(T);
    if (probe_) note(ProbeOp::kLoad, sizeof(T), 1, at);
    return *p;
  }
  template <typename T>
  void store(T* p, T v, Where at = Where::current()) {
    bytes_written_ += sizeof(T);
    if (probe_) note(ProbeOp::kStore, sizeof(T), 1, at);
    *p = v;
  }
  /// Atomic add on a 4- or 8-byte integer; returns the old value.
  template <typename T>
  T atomic_add(T* p, T v, Where at = Where::current()) {
    bytes_read_ += sizeof(T);
    bytes_written_ += sizeof(T);
    if (probe_) note(ProbeOp::kAtomic, sizeof(T), 1, at);
    return std::atomic_ref<T>(*p).fetch_add(v);
  }
  void count_ops(uint64_t n = 1, Where at = Where::current()) {
    ops_ += n;
    if (probe_) note(ProbeOp::kOps, 0, n, at);
  }
  /// Like a device-side assert or trap: the launch fails (its wait reports DEVICE_FAULT).
  void trap() { trapped_ = true; }
  /// Like device-side malloc / free (new / delete): from the device's heap (device_heap.hpp),
  /// which kernels of a module loaded with ModuleDesc::uses_device_heap use. malloc gives nullptr
  /// when the heap is full; freeing what is not a live allocation traps (a double free).
  void* heap_malloc(size_t bytes);
  void heap_free(void* p);
  uint64_t global_thread_id() const;

 private:
  friend class Executor;
  void note(ProbeOp op, uint32_t bytes, uint64_t n, const Where& at);
  const std::byte* args_ = nullptr;
  const uint32_t* offsets_ = nullptr;
  uint64_t bytes_read_ = 0, bytes_written_ = 0, ops_ = 0;
  bool trapped_ = false;
  class DeviceHeap* heap_ = nullptr;  ///< the device's heap (device_heap.hpp)
  Probe* probe_ = nullptr;            ///< set while a per-pass service collects on the submission
};

// ---- markers (--range-markers cuda-profiler | nvtx:NAME, --profile-from-start, --nvtx-include)
// ----
/// Like cudaProfilerStart / cudaProfilerStop.
void profiler_start();
void profiler_stop();
/// Like nvtxRangePushA / nvtxRangePop (per thread).
void nvtx_range_push(const char* name);
void nvtx_range_pop();
// ---- NVTX selection (--nvtx-include; hostrt_nvtx.cpp): the other NVTX calls ----
/// Like nvtxDomainRangePushEx / nvtxDomainRangePop: a push/pop range of domain @p domain on the
/// calling thread ("" or NULL: NVTX's default domain, as nvtx_range_push / nvtx_range_pop).
void nvtx_domain_range_push(const char* domain, const char* name);
void nvtx_domain_range_pop(const char* domain);
/// Like nvtxRangeStartA / nvtxDomainRangeStartEx: a start/end range of the process; its id.
uint64_t nvtx_range_start(const char* name, const char* domain = nullptr);
/// Like nvtxRangeEnd / nvtxDomainRangeEnd: ends range @p id (any thread may end it).
void nvtx_range_end(uint64_t id);

namespace testing {
/// A module-scope variable's address without loading a lazy module (get_global loads it).
Result<void*> module_global(Module module, std::string_view name);
/// Make the next snapshot on @p device fail (to test the SNAPSHOT_FAILED decline).
void fail_next_snapshot(int device = 0);
/// Make the next @p n counter passes on @p device fail to start (as CUPTI can fail).
void fail_counter_passes(int n, int device = 0);
/// Agent handle of @p device.
uint64_t agent_of(int device = 0);
/// The device heap (device_heap.hpp): whether @p device can save and restore it (default true;
/// false models a device that cannot, whose heap launches are declined DEVICE_HEAP); with
/// @p skip, restore_heap puts nothing back (shows what the restore prevents); its live
/// allocations now.
void set_heap_restorable(bool restorable, int device = 0);
void skip_heap_restore(bool skip, int device = 0);
/// Whether a launch set the device heap up already (false: the next heap launch is the first,
/// runs once, and sets it up, as in a new CUDA context).
void set_heap_set_up(bool set_up, int device = 0);
/// Whether @p device's counters patch the kernels' code (as CUDA's SASS metrics do): a lazily
/// loaded module then closes the open range even without variables.
void set_counters_patch_code(bool on, int device = 0);
size_t heap_live_allocations(int device = 0);
/// Cache flushes the engine asked @p device for (Device::flush_caches): all of them, those made
/// while a kernel ran, per kernel submission (in order) the flushes since the previous one, and
/// per kernel execution (in the order they started) the bytes earlier kernels wrote since the
/// last flush: what a GPU kernel would be charged for writing back (0: it started cold).
struct CacheFlushes {
  uint64_t total = 0;
  uint64_t inside_pass = 0;
  std::vector<uint64_t> before_submission;
  std::vector<uint64_t> dirty_at_start;
};
CacheFlushes cache_flushes(int device = 0);
/// Call @p hook (on the engine's thread) at the start of every cache flush on @p device; an empty
/// function removes it. Lets a test act in the moments a flush happens (a range just opened).
void on_cache_flush(std::function<void()> hook, int device = 0);
}  // namespace testing

}  // namespace kreplay::hostrt
