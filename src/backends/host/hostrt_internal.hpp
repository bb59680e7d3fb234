// The host runtime's own state, shared by its source files (hostrt.cpp: memory, streams, events,
// modules; hostrt_launch.cpp: launches, stream capture and graphs). Not part of the hostrt API.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/host/host_device.hpp"
#include "backends/host/hostrt.hpp"
#include "common/env.hpp"
#include "sdk/runtime.hpp"

namespace kreplay::hostrt::detail {

struct Allocation {
  size_t size = 0;
  int device = 0;
  bool tracked = true;
  kreplay_memory_kind_t kind = KREPLAY_MEMORY_KIND_DEVICE;
  /// A stream-ordered allocation (malloc_async) back in the runtime's pool: not the
  /// application's until malloc_async hands it out again (hostrt_memory.cpp).
  bool pooled = false;
};

/// A block free_async gave back to the pool: malloc_async on `stream` may take it at once (as
/// CUDA's stream-ordered allocator does); another stream only once `stream` reached the free.
struct PooledBlock {
  void* ptr = nullptr;
  size_t size = 0;
  int device = 0;
  Stream stream = 0;
  std::shared_ptr<std::atomic<bool>> reached;
};

/// An event: record N marks its stream's point N; waits are for the last point recorded.
struct HostEvent {
  int device = 0;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;  ///< points recorded so far
  uint64_t reached = 0;   ///< the latest point its stream has run past

  void reach(uint64_t point) {
    {
      std::lock_guard lock(mu);
      reached = std::max(reached, point);
    }
    cv.notify_all();
  }
  void wait_for(uint64_t point) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return reached >= point; });
  }
};

struct KernelRec {
  KernelDesc desc;
  Module module = 0;
  int device = 0;
  uint64_t sdk_kernel_id = 0;
  std::vector<uint32_t> offsets;
  uint32_t arg_bytes = 0;
  const sdk::KernelEntry* entry = nullptr;
};

struct ModuleRec {
  int device = 0;
  uint64_t code_object = 0;
  std::vector<Kernel> kernels;
  std::map<std::string, void*, std::less<>> globals;
  bool loaded = true;
  /// ModuleDesc::lazy: whether the first launch (or get_global) has loaded it into the device
  /// (its variables tracked); set under load_mu.
  std::atomic<bool> materialized{true};
  std::vector<std::pair<void*, size_t>> pending_globals;
  std::mutex load_mu;
};

class Runtime {
 public:
  static Runtime& get() {
    static Runtime* rt = new Runtime();  // NOLINT: lives for the process, like the SDK
    return *rt;
  }

  Status init(const Config& config) {
    std::lock_guard lock(init_mu_);
    if (initialized_) {
      if (config.device_count != config_.device_count ||
          config.memory_bytes != config_.memory_bytes ||
          config.pinned_bytes != config_.pinned_bytes ||
          config.counters_per_pass != config_.counters_per_pass) {
        return Error(KREPLAY_STATUS_ERROR_CONFIGURATION_LOCKED,
                     "the host runtime is already initialized with a different configuration");
      }
      return Status::Ok();
    }
    if (config.device_count < 1 || config.device_count > 16) {
      return Error(KREPLAY_STATUS_ERROR_INVALID_ARGUMENT, "device_count must be 1..16");
    }
    config_ = config;
    auto& sdk = sdk::Runtime::get();
    const int fail_passes = static_cast<int>(env::get_int("KREPLAY_HOST_FAIL_COUNTER_PASSES", 0));
    for (int i = 0; i < config.device_count; ++i) {
      auto dev = std::make_unique<HostDevice>(i, config);
      if (fail_passes > 0) dev->fail_counter_passes(fail_passes);
      dev->agent = sdk.add_device(dev.get());
      auto stream = std::make_shared<HostStream>(i, next_stream_++);
      dev->add_stream(stream);
      {
        std::unique_lock slock(mu_);
        streams_[stream->id()] = stream;
      }
      default_streams_.push_back(stream->id());
      devices_.push_back(std::move(dev));
    }
    initialized_ = true;
    // Tools load after the devices exist, so they can list agents and counters.
    sdk.initialize();
    return Status::Ok();
  }

  Status ensure() {
    if (initialized_.load(std::memory_order_acquire)) return Status::Ok();
    Config c;
    c.device_count = static_cast<int>(env::get_int("KREPLAY_HOST_DEVICES", c.device_count));
    if (auto v = env::get("KREPLAY_HOST_MEMORY")) env::parse_bytes(*v, &c.memory_bytes);
    if (auto v = env::get("KREPLAY_HOST_PINNED")) env::parse_bytes(*v, &c.pinned_bytes);
    c.counters_per_pass =
        static_cast<uint32_t>(env::get_int("KREPLAY_HOST_COUNTERS_PER_PASS", c.counters_per_pass));
    return init(c);
  }

  HostDevice* device(int index) {
    return index >= 0 && static_cast<size_t>(index) < devices_.size() ? devices_[index].get()
                                                                      : nullptr;
  }

  Result<HostDevice*> checked_device(int index) {
    RETURN_IF_ERROR(ensure());
    HostDevice* d = device(index);
    if (d == nullptr) {
      return Error(KREPLAY_STATUS_ERROR_AGENT_NOT_FOUND,
                   fmt::format("no host device {} (there are {})", index, devices_.size()));
    }
    return d;
  }

  std::shared_ptr<HostStream> stream(Stream id) {
    if (id == kPerThreadStream) id = thread_stream();
    std::shared_lock lock(mu_);
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second;
  }

  /// The calling thread's own stream of device 0 (kPerThreadStream), created on first use; 0 when
  /// the runtime cannot start.
  Stream thread_stream();

  Config config_;
  std::mutex init_mu_;
  std::atomic<bool> initialized_{false};
  std::vector<std::unique_ptr<HostDevice>> devices_;
  std::vector<Stream> default_streams_;

  std::shared_mutex mu_;  // guards the maps below
  std::unordered_map<Stream, std::shared_ptr<HostStream>> streams_;
  std::unordered_map<Event, std::shared_ptr<HostEvent>> events_;
  Event next_event_ = 1;
  std::map<uintptr_t, Allocation> allocations_;
  std::vector<PooledBlock> pool_;  // free_async's blocks (hostrt_memory.cpp)
  std::vector<std::unique_ptr<KernelRec>> kernels_;
  std::vector<std::unique_ptr<ModuleRec>> modules_;
  std::vector<std::vector<HostGraphNode>> graphs_;
  std::map<Graph, uint64_t>
      graph_kernel_ids_;  // graph -> SDK kernel id of its whole-graph dispatch
  std::vector<std::unique_ptr<std::byte[]>> graph_memory_;  // what memory-allocation nodes own
  Stream next_stream_ = 1;

 private:
  Runtime() = default;
};

/// ModuleDesc::lazy: load @p m into its device now, if not yet (closes the open range first).
Status materialize(ModuleRec& m);

inline Runtime& rt() {
  return Runtime::get();
}

}  // namespace kreplay::hostrt::detail
