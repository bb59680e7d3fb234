// The Device interface: the only seam between the replay engine and a vendor (DESIGN.md §1).
//
// A backend (host device, CUDA) implements Device for each agent and Launch for each intercepted
// kernel launch. The engine drives them; nothing above this file knows which vendor runs below.
//
// Threading: Device methods may be called from any application thread. The engine serializes
// replay windows per device, so snapshot/find_changed/restore are never called concurrently for
// one device. Launch objects are used only by the thread that intercepted the launch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.hpp"
#include "kreplay/fwd.h"

namespace kreplay::device {

/// Static description of a device.
struct AgentDesc {
  kreplay_agent_type_t type = KREPLAY_AGENT_TYPE_NONE;
  uint32_t device_index = 0;
  std::string name;
  std::string chip;
  std::string uuid;
  uint64_t memory_bytes = 0;
  uint32_t multiprocessor_count = 0;
  uint32_t cc_major = 0;
  uint32_t cc_minor = 0;
  uint32_t counters_per_pass = 0;
};

/// Where snapshot bytes live.
enum class StorageTier { kDevice, kPinnedHost };

/// A block of snapshot storage owned by a device (kept across dispatches by the engine).
struct Storage {
  uint64_t address = 0;  ///< address the device's copy routines accept
  uint64_t size = 0;
  StorageTier tier = StorageTier::kDevice;
  uint64_t handle = 0;  ///< backend-private
};

/// One region to save and restore: live memory (through a writable mapping) ↔ storage.
struct CopyRegion {
  uint64_t live = 0;
  uint64_t storage = 0;
  uint64_t size = 0;
  uint64_t first_chunk = 0;  ///< index of the region's first chunk in the digest array
};

/// Chunks are numbered globally over a region list: region r covers chunks
/// [first_chunk, first_chunk + ceil(size / chunk_bytes)).
inline uint64_t chunk_count(uint64_t size, uint64_t chunk_bytes) {
  return (size + chunk_bytes - 1) / chunk_bytes;
}

/// Live address and size of @p chunk of @p regions (numbered as above, regions in chunk order).
inline std::pair<uint64_t, uint64_t> chunk_live(std::span<const CopyRegion> regions,
                                                uint64_t chunk_bytes, uint64_t chunk) {
  auto it = std::upper_bound(regions.begin(), regions.end(), chunk,
                             [](uint64_t c, const CopyRegion& r) { return c < r.first_chunk; });
  const CopyRegion& r = *(it - 1);  // the region holding `chunk`: the last whose first_chunk <= it
  const uint64_t offset = (chunk - r.first_chunk) * chunk_bytes;
  return {r.live + offset, std::min(chunk_bytes, r.size - offset)};
}

/// Start and end of one executed pass, in the SDK clock (kreplay::now_ns()).
struct PassTiming {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

/// A counter a device can collect.
struct CounterDesc {
  std::string name;
  std::string description;
  std::string unit;
  kreplay_counter_value_type_t type = KREPLAY_COUNTER_VALUE_TYPE_COUNT;
};

/// A set of counters built by a device; opaque to the engine.
class CounterSet {
 public:
  virtual ~CounterSet() = default;
  virtual const std::vector<std::string>& names() const = 0;
  /// Hardware passes needed to collect every counter of the set.
  virtual uint64_t pass_count() const = 0;
};

/// One value of one counter on one pass.
struct CounterValue {
  std::string name;
  double value = 0.0;
};

class Launch;
class PassService;

/// Counter collection on a device. Optional: Device::counters() may return nullptr.
class CounterBackend {
 public:
  virtual ~CounterBackend() = default;
  virtual Result<std::vector<CounterDesc>> list() = 0;
  /// Build a set; errors: COUNTER_NOT_FOUND (message names it and suggests close names),
  /// EXCEEDS_HW_LIMIT (message names the group).
  virtual Result<std::shared_ptr<CounterSet>> create(const std::vector<std::string>& names) = 0;
  /// Arm collection of @p sets for the next submission of @p launch. Called before submit.
  virtual Status begin_pass(Launch& launch, std::span<CounterSet* const> sets) = 0;
  /// After the submission completed: the values of every armed set, in the order given.
  virtual Result<std::vector<std::vector<CounterValue>>> end_pass(Launch& launch) = 0;

  /// Range replay: collect @p set over every launch submitted on the device until
  /// end_range_pass. @p first_pass starts a new collection (a new range). @p whole_graph: the
  /// range is one graph launch, counted as one workload (one set of values). @p flushes: the
  /// engine flushes the caches between the range's launches in every pass of the collection
  /// (range_flush), so a device whose flush is counted work of its own makes room for it.
  virtual Status begin_range_pass(CounterSet* set, bool first_pass, bool whole_graph,
                                  bool flushes) {
    (void)set;
    (void)first_pass;
    (void)whole_graph;
    (void)flushes;
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "this device cannot count over ranges");
  }
  /// Range replay, --cache-control all: the engine flushed the device's caches
  /// (Device::flush_caches, completed) inside the open range pass, after @p launches of the
  /// launches this pass counts were submitted and completed, before the next one. A device whose
  /// flush is a kernel of its own that the session counts (CUDA: a range of its own) leaves that
  /// range out of end_range_pass's values (launch_ranges(), range_flushes.hpp). Default: nothing.
  virtual void range_flush(size_t launches) { (void)launches; }
  /// After the pass's @p launches launches completed: values per launch, in submission order
  /// (empty when the set needs more passes); ranges of the pass's flushes are not among them.
  virtual Result<std::vector<std::vector<CounterValue>>> end_range_pass(size_t launches) {
    (void)launches;
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "this device cannot count over ranges");
  }

  /// Whether a counter set created so far collects metrics by patching the kernels' code (CUDA:
  /// CUPTI's SASS metrics, smsp__sass_* and sass__*). Code loaded while such a collection runs
  /// is not launched again inside it (the CUDA interceptor closes the open range first).
  virtual bool patches_code() const { return false; }
  /// Before a replay window of @p launch opens (kernel replay: before its snapshot; range replay
  /// when the range opens, @p range true), outside any pass, with the device's window held and
  /// a tool counting: a device whose first counted pass carries a one-time start-up cost may
  /// pay it here, on work of its own, so that no dispatch's passes carry it. Never fails the
  /// launch. Default: nothing (the host device has no such cost).
  virtual void warm_start(Launch& launch, bool range) {
    (void)launch;
    (void)range;
  }
};

/// What the engine knows of an intercepted launch.
struct LaunchInfo {
  kreplay_agent_id_t agent{};
  kreplay_stream_id_t stream{};
  uint64_t kernel_id = 0;
  const char* kernel_name = "";  ///< demangled; lives as long as the process
  const char* mangled_name = "";
  kreplay_dim3_t grid{1, 1, 1};
  kreplay_dim3_t block{1, 1, 1};
  kreplay_dim3_t cluster{0, 0, 0};
  uint32_t dynamic_shared_bytes = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t registers = 0;
  uint32_t flags = 0;                    ///< KREPLAY_DISPATCH_FLAG_*
  std::span<const std::byte> arg_bytes;  ///< packed argument bytes (for snapshot scope "args")
  uint64_t graph_id = 0;                 ///< the executable graph this launch belongs to (0: none)
  uint64_t graph_node = 0;  ///< a graph's kernel node: its index in the graph's node order
};

/// What a backend knows of a graph launch (Launch::graph()).
struct GraphInfo {
  uint64_t graph_id = 0;      ///< the executable graph, the same over its launches (> 0)
  uint64_t kernel_nodes = 0;  ///< kernel nodes, those of child graphs included
  /// Why the graph cannot be launched again as a whole (GRAPH_DEVICE_LAUNCH; GRAPH_MEMORY for
  /// memory nodes), or NONE when it can.
  kreplay_decline_reason_t unreplayable = KREPLAY_DECLINE_REASON_NONE;
  /// Why its nodes cannot be run again one at a time (GRAPH_DEVICE_LAUNCH; GRAPH_MEMORY for a
  /// free node of memory the graph did not allocate, which may be gone once the launch freed
  /// it), or NONE when they can. Memory nodes that allocate are no obstacle: an allocation is
  /// tracked from its node on (a GraphStep) and retires at its free node.
  kreplay_decline_reason_t nodes_unreplayable = KREPLAY_DECLINE_REASON_NONE;
  /// The graph has host-function nodes: launching it again would run their host code again, so
  /// it cannot be replayed as a whole (GRAPH_HOST_NODE); run node by node, the host nodes are
  /// left out (they ran once, in the application's own launch).
  bool host_nodes = false;
  /// Why its nodes cannot be run one at a time ("conditional nodes", ...); "" when they can.
  std::string whole_only;
  /// The argument bytes of its kernel nodes and the addresses its copy nodes use, each padded
  /// to a multiple of 8 bytes: where the engine looks for another device's memory (PEER_MEMORY).
  /// Empty when the backend does not say.
  std::vector<std::byte> node_words;

  /// Why the graph launch, as one workload, is not replayed (unreplayable, else GRAPH_HOST_NODE
  /// for host nodes), or NONE.
  kreplay_decline_reason_t whole_decline() const {
    if (unreplayable != KREPLAY_DECLINE_REASON_NONE) return unreplayable;
    return host_nodes ? KREPLAY_DECLINE_REASON_GRAPH_HOST_NODE : KREPLAY_DECLINE_REASON_NONE;
  }
};

/// One step of a graph run node by node (Launch::decompose()), in an order the graph allows.
struct GraphStep {
  /// A kernel node, as a launch kreplay submits itself (Launch::submit() is its pass 0); its
  /// info() carries the node's kernel, configuration, graph_id and graph_node.
  std::unique_ptr<class Launch> kernel;
  /// Any other node that does work (a copy, a memset): submit it, stream-ordered. For a memory
  /// node, what it does to the memory kreplay tracks: an allocation of the graph's appears (from
  /// then on it is saved and restored for the kernel nodes that follow, like any memory) or, at
  /// its free node, retires.
  std::function<Status()> other;
};

/// One intercepted launch, as a backend presents it to the engine.
class Launch {
 public:
  virtual ~Launch() = default;
  virtual const LaunchInfo& info() const = 0;
  /// Submit the same launch again (same stream, arguments and configuration). Pass > 0 only:
  /// pass 0 is the application's own submission.
  virtual Status relaunch() = 0;
  /// Wait until the most recent submission completed; fill its timing.
  /// Returns DRAIN_TIMEOUT-like ERROR after @p timeout_ms (the work may still be running).
  virtual Status wait(uint64_t timeout_ms, PassTiming* timing) = 0;
  /// Whether the most recent submission completed (does not wait).
  virtual bool completed() { return wait(0, nullptr).ok(); }
  /// After the application's submission: a self-contained copy (arguments and configuration
  /// copied) that can be submitted again after the application's call returned and its buffers
  /// are gone, and that waits for the submission just made. May move per-submission state out
  /// of this object. nullptr when the backend cannot record the launch.
  virtual std::unique_ptr<Launch> record() { return nullptr; }
  /// Whether record() will succeed for this launch (asked before the submission).
  virtual bool recordable() const { return false; }
  /// What the launch runs in beyond its device (CUDA: its context), as a key: two launches with
  /// different non-zero keys cannot be submitted again under one Device::bind_launch_context.
  /// 0: the device has no such thing.
  virtual uint64_t context_key() const { return 0; }

  // ---- graph launches ----
  /// A graph launch: what the engine needs to replay it; nullptr for a kernel launch.
  virtual const GraphInfo* graph() const { return nullptr; }
  /// A graph launch whose nodes can run one at a time (GraphInfo::whole_only empty): its nodes,
  /// on the launch's stream, in an order the graph's dependencies allow.
  virtual Result<std::vector<GraphStep>> decompose() {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "not a graph launch");
  }
  /// A launch kreplay submits itself (a graph's kernel node): its first submission, pass 0.
  virtual Status submit() { return relaunch(); }
  /// Wait until all work submitted to the launch's stream so far completed.
  virtual Status wait_stream(uint64_t timeout_ms) {
    (void)timeout_ms;
    return Status::Ok();
  }
};

/// A memory operation of the application recorded into a range (range replay, DESIGN.md §2b): a
/// memset, a copy between device memory, or a copy from host bytes the backend captured when the
/// application made the call. The range's later passes submit it again, in order with the range's
/// launches. Used only by the thread that holds the range.
class MemoryOp {
 public:
  virtual ~MemoryOp() = default;
  /// Submit the operation again on its stream, as the application's call did (passes > 0).
  virtual Status resubmit() = 0;
  /// Wait until the most recent submission (on pass 0: the application's own call) completed.
  virtual Status wait(uint64_t timeout_ms) = 0;
};

/// A device, as the engine drives it.
class Device {
 public:
  virtual ~Device() = default;
  virtual const AgentDesc& desc() const = 0;

  /// Wait until every submitted operation on the device finished, or fail after @p timeout_ms.
  virtual Status drain(uint64_t timeout_ms) = 0;

  /// Bytes of new snapshot storage the tier can provide now (after headroom for the application).
  virtual uint64_t storage_available(StorageTier tier) = 0;
  virtual Result<Storage> allocate_storage(StorageTier tier, uint64_t bytes) = 0;
  virtual void free_storage(const Storage& storage) = 0;

  /// Copy every region live → storage in one batch and record one 64-bit digest per chunk into
  /// @p digests (sized to the total chunk count by the caller).
  virtual Status snapshot(std::span<const CopyRegion> regions, uint64_t chunk_bytes,
                          std::span<uint64_t> digests) = 0;

  /// Compare live memory against @p digests; append the global index of every chunk that differs.
  virtual Status find_changed(std::span<const CopyRegion> regions, uint64_t chunk_bytes,
                              std::span<const uint64_t> digests,
                              std::vector<uint64_t>* changed) = 0;

  /// Digest live memory: one 64-bit digest per chunk of every region into @p digests (the same
  /// digest as snapshot()'s, without copying). NOT_AVAILABLE: the device cannot.
  virtual Status digest_live(std::span<const CopyRegion> regions, uint64_t chunk_bytes,
                             std::span<uint64_t> digests) {
    (void)regions;
    (void)chunk_bytes;
    (void)digests;
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "this device cannot digest its memory");
  }

  /// Write-bounded snapshots (DESIGN.md §3): the device keeps one baseline, a digest per chunk of
  /// @p regions' live memory (the same digest as snapshot()'s), where it is cheapest to compare
  /// (on a GPU: on the GPU). Replaces any earlier baseline. Storage addresses are not used.
  /// NOT_AVAILABLE: the device cannot (the engine then saves full snapshots only).
  virtual Status digest_baseline(std::span<const CopyRegion> regions, uint64_t chunk_bytes) {
    (void)regions;
    (void)chunk_bytes;
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "this device keeps no digest baseline");
  }
  /// Append, in ascending order, every global chunk of @p regions (the layout digest_baseline was
  /// given) whose live digest differs from the baseline; with @p update the baseline then holds
  /// the live digests. @p was_zero (may be null) receives, ascending, those of them whose
  /// baseline digest was the digest of all-zero bytes: memory that held zeros before (fresh
  /// allocations do), which zero_chunks() puts back without a saved copy. ERROR when no
  /// baseline of this layout is kept.
  virtual Status changed_since_baseline(std::span<const CopyRegion> regions, uint64_t chunk_bytes,
                                        bool update, std::vector<uint64_t>* changed,
                                        std::vector<uint64_t>* was_zero) {
    (void)regions;
    (void)chunk_bytes;
    (void)update;
    (void)changed;
    (void)was_zero;
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "this device keeps no digest baseline");
  }
  /// Write zeros over the listed global chunks of @p regions' live memory (storage addresses
  /// are not used). Returns when done.
  virtual Status zero_chunks(std::span<const CopyRegion> regions, uint64_t chunk_bytes,
                             std::span<const uint64_t> chunks) {
    (void)regions;
    (void)chunk_bytes;
    (void)chunks;
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "this device cannot zero its memory");
  }

  /// Copy the listed chunks storage → live, in one batch. Returns when the copy is complete.
  virtual Status restore(std::span<const CopyRegion> regions, uint64_t chunk_bytes,
                         std::span<const uint64_t> chunks) = 0;

  /// The device-side heap (device malloc/free/new/delete), its allocator's state included, for a
  /// window over a launch that uses it (KREPLAY_DISPATCH_FLAG_DEVICE_HEAP): save_heap() before
  /// the window's first pass (the device drained), restore_heap() before each later pass,
  /// drop_heap() when the window ends. Each returns when done; the bytes saved / put back.
  /// NOT_AVAILABLE (the default): the device cannot, and such launches are declined DEVICE_HEAP.
  virtual Result<uint64_t> save_heap() {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "this device cannot save its device heap");
  }
  virtual Result<uint64_t> restore_heap() {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "this device cannot restore its device heap");
  }
  virtual void drop_heap() {}

  /// Make what @p launch needs to run again current on the calling thread (CUDA: its context)
  /// for as long as the returned guard lives: a range may close, and replay, on a thread other
  /// than the one that launched it, which may have no context of its own. Null: nothing to undo.
  virtual std::shared_ptr<void> bind_launch_context(Launch& launch) {
    (void)launch;
    return nullptr;
  }

  /// Whether the stream handle @p stream means the calling thread's own stream (CUDA: the
  /// per-thread default stream): the same handle from two threads names two streams, so work on it
  /// from a thread other than a range's own is never ordered with the range's.
  virtual bool thread_stream(uint64_t stream) const {
    (void)stream;
    return false;
  }

  /// Bytes of device memory kernels may write that the inventory does not track (0 = none).
  virtual uint64_t untracked_bytes() { return 0; }

  /// A stream capture is in progress on the device: kreplay must not synchronize it (the capture
  /// would be invalidated), so replay windows are declined meanwhile.
  virtual bool capture_active() { return false; }

  /// Write back and invalidate the device's caches (--cache-control all), so that the work
  /// submitted next starts cold. Stream-ordered before any later submission and complete when
  /// this returns. The engine calls it before every counted pass, after the restore and before
  /// the pass's services start, and in a replayed range also between the range's launches, once
  /// the launch before has completed (CounterBackend::range_flush). NOT_AVAILABLE: the device
  /// cannot (the engine says so once).
  virtual Status flush_caches() {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE, "this device cannot flush its caches");
  }

  /// Counter collection, or nullptr when the device has none.
  virtual CounterBackend* counters() { return nullptr; }

  /// The per-pass service of @p kind (a kreplay_pass_service_kind_t, see service.hpp), or
  /// nullptr when the device has none.
  virtual PassService* service(int kind) {
    (void)kind;
    return nullptr;
  }
};

}  // namespace kreplay::device
