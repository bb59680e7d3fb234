// The host device: device::Device and device::CounterBackend over host memory and worker-thread
// streams. See hostrt.hpp for the application-facing runtime built on it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/host/device_heap.hpp"
#include "backends/host/hostrt.hpp"
#include "backends/host/services/host_service.hpp"
#include "device/device.hpp"

namespace kreplay::hostrt {

/// One execution of a kernel (or copy) on a stream, filled in by the worker.
struct ExecRecord {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t threads = 0, blocks = 0, bytes_read = 0, bytes_written = 0, ops = 0;
  bool trapped = false;          ///< a thread called ThreadContext::trap()
  std::shared_ptr<Probe> probe;  ///< what a per-pass service observed (finished before `done`)

  void finish();
  /// Wait until done or @p timeout_ms passed; true when done.
  bool wait(uint64_t timeout_ms);
};

/// An in-order queue of work executed by one worker thread.
class HostStream {
 public:
  HostStream(int device, Stream id);
  ~HostStream();
  void enqueue(std::function<void()> work);
  /// Wait until the queue is empty and nothing runs, or the deadline passes.
  bool wait_idle(uint64_t timeout_ms);

  int device() const { return device_; }
  Stream id() const { return id_; }

  // Capture state (guarded by the runtime's lock).
  bool capturing = false;
  Graph capture_graph = 0;

 private:
  void run();
  int device_;
  Stream id_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread worker_;
};

class HostCounterSet final : public device::CounterSet {
 public:
  explicit HostCounterSet(std::vector<std::string> names) : names_(std::move(names)) {}
  const std::vector<std::string>& names() const override { return names_; }
  uint64_t pass_count() const override { return 1; }

 private:
  std::vector<std::string> names_;
};

class HostDevice final : public device::Device, public device::CounterBackend {
 public:
  HostDevice(int index, const Config& config);

  // device::Device
  const device::AgentDesc& desc() const override { return desc_; }
  Status drain(uint64_t timeout_ms) override;
  uint64_t storage_available(device::StorageTier tier) override;
  Result<device::Storage> allocate_storage(device::StorageTier tier, uint64_t bytes) override;
  void free_storage(const device::Storage& storage) override;
  Status snapshot(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                  std::span<uint64_t> digests) override;
  Status find_changed(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                      std::span<const uint64_t> digests, std::vector<uint64_t>* changed) override;
  Status restore(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                 std::span<const uint64_t> chunks) override;
  uint64_t untracked_bytes() override { return untracked_.load(); }
  Status digest_live(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                     std::span<uint64_t> digests) override;
  Status digest_baseline(std::span<const device::CopyRegion> regions,
                         uint64_t chunk_bytes) override;
  Status changed_since_baseline(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                                bool update, std::vector<uint64_t>* changed,
                                std::vector<uint64_t>* was_zero) override;
  Status zero_chunks(std::span<const device::CopyRegion> regions, uint64_t chunk_bytes,
                     std::span<const uint64_t> chunks) override;
  /// digest_baseline() calls so far (tests: a window that reuses the last one takes none).
  uint64_t baseline_digests_taken();
  // The device heap (device_heap.cpp).
  Result<uint64_t> save_heap() override;
  Result<uint64_t> restore_heap() override;
  void drop_heap() override;
  std::shared_ptr<void> bind_launch_context(device::Launch& launch) override;
  /// Whether the calling thread is inside bind_launch_context (HostLaunch::submit checks).
  static bool launch_context_bound();
  bool thread_stream(uint64_t stream) const override { return stream == kPerThreadStream; }
  DeviceHeap* heap();  ///< created on first use (KREPLAY_HOST_HEAP bytes, default 1 MiB)
  void set_heap_restorable(bool v) { heap_restorable_ = v; }
  void set_heap_set_up(bool v) { heap_set_up_ = v; }
  /// As CUDA's counters with SASS-patched metrics (CounterBackend::patches_code): then a lazily
  /// loaded module closes the open range (hostrt), as the CUDA interceptor does.
  void set_patches_code(bool v) { patches_code_ = v; }
  void skip_heap_restore(bool v) { skip_heap_restore_ = v; }
  /// The host device has no caches: it counts the flushes and models what they leave (for tests:
  /// hostrt::testing). Like CUDA's flush, which is a kernel, one made while a range counter
  /// session is open takes a range of its own there, which end_range_pass leaves out where
  /// range_flush says it fell.
  Status flush_caches() override;
  device::CounterBackend* counters() override { return this; }
  device::PassService* service(int kind) override;

  // device::CounterBackend
  Result<std::vector<device::CounterDesc>> list() override;
  bool patches_code() const override { return patches_code_.load(); }
  Result<std::shared_ptr<device::CounterSet>> create(
      const std::vector<std::string>& names) override;
  Status begin_pass(device::Launch& launch, std::span<device::CounterSet* const> sets) override;
  Result<std::vector<std::vector<device::CounterValue>>> end_pass(device::Launch& launch) override;
  /// Beginning a range session dirties kSessionStartDirtyBytes, as CUPTI's Start writes device
  /// memory on CUDA: a launch submitted after it without a flush between starts dirty.
  Status begin_range_pass(device::CounterSet* set, bool first_pass, bool whole_graph,
                          bool flushes) override;
  static constexpr uint64_t kSessionStartDirtyBytes = 4096;
  void range_flush(size_t launches) override;
  Result<std::vector<std::vector<device::CounterValue>>> end_range_pass(size_t launches) override;

  /// A launch was submitted: record its execution for an open range counter session.
  void note_submission(const std::shared_ptr<ExecRecord>& rec);

  // For the runtime.
  bool reserve(uint64_t bytes);  ///< take device memory; false when full
  void unreserve(uint64_t bytes);
  void add_untracked(int64_t delta) { untracked_ += delta; }
  void add_stream(std::shared_ptr<HostStream> s);
  void remove_stream(Stream id);
  std::vector<std::shared_ptr<HostStream>> streams();
  void fail_next_snapshot() { fail_next_snapshot_ = true; }
  /// Make the next @p n counter passes fail to start (as CUPTI can), for tests.
  void fail_counter_passes(int n) { fail_counter_passes_ = n; }
  /// A kernel submission starts / finished executing (for cache_flushes().inside_pass).
  uint64_t submission_started();
  void submission_finished() { running_.fetch_sub(1); }
  /// A kernel submission starts / finished executing on its worker: the cache model. Bytes
  /// kernels wrote since the last flush_caches() are dirty; an execution that starts with dirty
  /// bytes would be charged for their write-back (as a GPU kernel's DRAM writes are when the L2
  /// was not flushed before it).
  void execution_started();
  void execution_finished(uint64_t bytes_written);
  /// What flush_caches() saw, for tests.
  struct FlushLog {
    uint64_t total = 0;        ///< flush_caches() calls
    uint64_t inside_pass = 0;  ///< calls while a kernel submission was in flight
    /// Per kernel submission, in order: flushes since the previous submission.
    std::vector<uint64_t> before_submission;
    /// Per kernel execution, in the order they started: the dirty bytes it started with (0: it
    /// started cold, right after a flush).
    std::vector<uint64_t> dirty_at_start;
  };
  FlushLog flush_log();
  /// Called at the start of every flush_caches() (for tests: hostrt::testing::on_cache_flush).
  void set_flush_hook(std::function<void()> hook);
  uint64_t agent = 0;

 private:
  device::AgentDesc desc_;
  uint64_t capacity_, pinned_capacity_;
  std::atomic<uint64_t> used_{0}, pinned_used_{0};
  std::atomic<int64_t> untracked_{0};
  std::atomic<bool> fail_next_snapshot_{false};
  std::atomic<int> fail_counter_passes_{0};
  std::atomic<int64_t> running_{0};
  std::mutex flush_mu_;
  std::function<void()> flush_hook_;  // guarded by flush_mu_; called without it
  FlushLog flushes_;
  uint64_t pending_flushes_ = 0;
  uint64_t dirty_bytes_ = 0;  // guarded by flush_mu_
  Status injected_counter_failure();
  std::mutex streams_mu_;
  std::map<Stream, std::shared_ptr<HostStream>> streams_;
  uint32_t counters_per_pass_;
  std::mutex range_mu_;
  bool range_active_ = false;
  bool range_whole_graph_ = false;
  std::vector<std::string> range_names_;
  /// The open range session's ranges in submission order: a launch's execution, or nullptr for a
  /// flush made inside the session.
  std::vector<std::shared_ptr<ExecRecord>> range_records_;
  std::vector<size_t> range_flushes_;  ///< range_flush() positions of the open session
  std::vector<std::unique_ptr<HostPassService>> services_;
  std::mutex baseline_mu_;
  std::vector<device::CopyRegion> baseline_;  ///< the layout the baseline digests cover
  uint64_t baseline_chunk_bytes_ = 0;
  std::vector<uint64_t> baseline_digests_;
  uint64_t baseline_digests_taken_ = 0;
  std::once_flag heap_once_;
  std::unique_ptr<DeviceHeap> heap_;
  std::mutex heap_mu_;
  std::vector<std::byte> heap_saved_;  ///< guarded by heap_mu_
  std::atomic<bool> heap_restorable_{true}, skip_heap_restore_{false};
  /// Whether a launch set the heap up already: as a CUDA context's, the heap is set up by the
  /// first launch that uses it, which nothing before it can save (save_heap).
  std::atomic<bool> heap_set_up_{false};
  std::atomic<bool> patches_code_{false};
};

/// What the host device executes as one submission: a kernel launch or a graph launch.
class HostWork : public device::Launch {
 public:
  const device::LaunchInfo& info() const override { return info_; }
  Status relaunch() override { return submit(); }
  Status wait(uint64_t timeout_ms, device::PassTiming* timing) override;
  Status wait_stream(uint64_t timeout_ms) override;
  bool completed() override { return last != nullptr && last->wait(0); }

  device::LaunchInfo info_;
  std::shared_ptr<HostStream> stream;
  HostDevice* device = nullptr;
  std::shared_ptr<ExecRecord> last;             ///< the latest submission
  std::vector<std::vector<std::string>> armed;  ///< counter sets to read after the submission
  std::shared_ptr<Probe> probe_next;   ///< a per-pass service armed for the next submission
  const Probe* probe_armed = nullptr;  ///< the probe this pass armed (flush checks `last` has it)
  /// The thread that launched it. Like a CUDA launch, which runs again only where its context is
  /// current, a launch is submitted again on another thread only inside
  /// HostDevice::bind_launch_context (a range closed by another thread's call).
  std::thread::id origin = std::this_thread::get_id();

 protected:
  /// One submission on `stream`: a new `last` record (with the armed probe), the device's
  /// submission bookkeeping, and on the stream's worker @p run between the timestamps.
  void enqueue_execution(std::function<void(ExecRecord&)> run);
};

/// A kernel launch: owns a copy of the argument bytes, so passes > 0 resubmit it.
class HostLaunch final : public HostWork {
 public:
  std::unique_ptr<device::Launch> record() override;
  bool recordable() const override { return true; }
  /// Submit to the stream (pass 0 and relaunches). Fails for an invalid configuration.
  Status submit() override;

  std::vector<std::byte> args;
  std::vector<uint32_t> offsets;
  KernelFn fn = nullptr;
  Dim3 grid, block;
};

/// One node of a host-device graph.
struct HostGraphNode {
  enum class Kind { kKernel, kCopy, kHost, kConditional, kAlloc, kFree } kind = Kind::kKernel;
  // kKernel
  KernelFn fn = nullptr;
  Dim3 grid, block;
  std::vector<std::byte> args;
  std::vector<uint32_t> offsets;
  uint64_t kernel_id = 0;  ///< SDK kernel id
  const char* kernel_name = "";
  const char* mangled_name = "";
  uint32_t dispatch_flags = 0;
  // kCopy (dst, src, bytes); kAlloc (dst: the graph's allocation, bytes); kFree (dst)
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  bool mem_inside = false;  ///< kAlloc/kFree: the graph both allocates and frees dst (describe())
  // kHost
  void (*host_fn)(void*) = nullptr;
  void* host_data = nullptr;
  // kConditional: the body's nodes run when *flag != 0
  const uint32_t* flag = nullptr;
  std::vector<HostGraphNode> body;
};

/// A graph launch: all the graph's nodes as one submission; decompose() gives them one by one.
class HostGraphLaunch final : public HostWork {
 public:
  std::unique_ptr<device::Launch> record() override;
  bool recordable() const override { return true; }
  Status submit() override;
  const device::GraphInfo* graph() const override { return &graph_; }
  Result<std::vector<device::GraphStep>> decompose() override;

  /// Fill graph() from the nodes (kernel count, host nodes, conditional and memory nodes).
  void describe(uint64_t graph_id);

  std::vector<HostGraphNode> nodes;
  device::GraphInfo graph_;
  /// Memory nodes whose effect outlives a launch (as ExecGraph's on CUDA): allocations the graph
  /// does not free, and frees of memory it did not allocate.
  std::vector<std::pair<void*, size_t>> allocates;
  std::vector<void*> frees;
};

}  // namespace kreplay::hostrt
