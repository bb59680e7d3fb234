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

#include "backends/host/hostrt.hpp"
#include "device/device.hpp"

namespace kreplay::hostrt {

/// One execution of a kernel (or copy) on a stream, filled in by the worker.
struct ExecRecord {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t threads = 0, blocks = 0, bytes_read = 0, bytes_written = 0, ops = 0;

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
  device::CounterBackend* counters() override { return this; }

  // device::CounterBackend
  Result<std::vector<device::CounterDesc>> list() override;
  Result<std::shared_ptr<device::CounterSet>> create(const std::vector<std::string>& names) override;
  Status begin_pass(device::Launch& launch, std::span<device::CounterSet* const> sets) override;
  Result<std::vector<std::vector<device::CounterValue>>> end_pass(device::Launch& launch) override;
  Status begin_range_pass(device::CounterSet* set, bool first_pass) override;
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
  uint64_t agent = 0;

 private:
  device::AgentDesc desc_;
  uint64_t capacity_, pinned_capacity_;
  std::atomic<uint64_t> used_{0}, pinned_used_{0};
  std::atomic<int64_t> untracked_{0};
  std::atomic<bool> fail_next_snapshot_{false};
  std::mutex streams_mu_;
  std::map<Stream, std::shared_ptr<HostStream>> streams_;
  uint32_t counters_per_pass_;
  std::mutex range_mu_;
  bool range_active_ = false;
  std::vector<std::string> range_names_;
  std::vector<std::shared_ptr<ExecRecord>> range_records_;
};

/// The launch the engine sees: owns a copy of the argument bytes, so passes > 0 resubmit it.
class HostLaunch final : public device::Launch {
 public:
  const device::LaunchInfo& info() const override { return info_; }
  Status relaunch() override;
  Status wait(uint64_t timeout_ms, device::PassTiming* timing) override;
  std::unique_ptr<device::Launch> record() override;
  bool recordable() const override { return !record_only; }

  /// Submit to the stream (pass 0 and relaunches). Fails for an invalid configuration.
  Status submit();

  device::LaunchInfo info_;
  std::vector<std::byte> args;
  std::vector<uint32_t> offsets;
  KernelFn fn = nullptr;
  Dim3 grid, block;
  std::shared_ptr<HostStream> stream;
  HostDevice* device = nullptr;
  bool record_only = false;  ///< captured: recorded into a graph instead of executed
  std::shared_ptr<ExecRecord> last;
  std::vector<std::vector<std::string>> armed;  ///< counter sets to read after the submission
};

}  // namespace kreplay::hostrt
