// The state of range replay (src/replay/range*.cpp; docs/design.md, "Range replay"): the options
// that decide what a range holds, and one open range's launches, memory calls, saved memory and
// outcome. Split from engine.hpp, which holds the engine that drives them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device/device.hpp"
#include "kreplay/range_replay.h"
#include "replay/plan.hpp"
#include "replay/snapshot.hpp"
#include "replay/write_set.hpp"

namespace kreplay::replay {

struct DispatchState;  // engine.hpp

/// KREPLAY_RANGE_CAPTURE_BYTES, else 64 MiB (RangeOptions::capture_bytes).
uint64_t default_range_capture_bytes();
/// KREPLAY_RANGE_MEMORY: `join` (default) or `close` (RangeOptions::join_memory).
bool default_range_join_memory();
/// KREPLAY_RANGE_HOST_READS: `join` or `close` (the default; RangeOptions::join_host_reads).
bool default_range_join_host_reads();

struct RangeOptions {
  uint64_t max_launches = 64;  ///< close a range at this many launches
  enum class Marker { kNone, kCudaProfiler, kNvtx } marker = Marker::kNone;
  std::string nvtx_name;  ///< kNvtx: the range name
  /// A plain synchronization (stream, event, device, a query) leaves a range open when its
  /// launches can have written no memory the host sees without a call (range_sync); false: every
  /// synchronization closes the range.
  bool span_syncs = true;
  /// Memsets, copies into device memory, allocations and frees on the range's streams join the
  /// open range (range_memops.cpp); false: each of them closes it.
  bool join_memory = default_range_join_memory();
  /// A host-to-device copy joins a range with its source bytes captured when the call is made;
  /// one that would take the bytes a range captured past this closes the range instead.
  uint64_t capture_bytes = default_range_capture_bytes();
  /// A copy from the range's device memory into plain host memory joins the open range too: it
  /// is not repeated on later passes (the host holds what the application's pass gave it), and
  /// the device memory that pass left is saved after it and put back after the last pass, so the
  /// device agrees with what the host read even where a replayed kernel is not deterministic.
  /// false: such a copy closes the range.
  bool join_host_reads = default_range_join_host_reads();
};

/// One launch recorded into a range.
struct RangeLaunch {
  std::unique_ptr<device::Launch> recorded;  ///< resubmittable copy
  std::unique_ptr<DispatchState> st;         ///< the launch's state for the services
  bool selected = true;
  bool counted = false;  ///< submitted inside the pass's counter session
};

/// A memory operation recorded into a range (range_memops.cpp): submitted again on every later
/// pass right before launch `before_launch` (after the range's last launch when it equals their
/// count), after the memory operations recorded before it.
struct RangeMemop {
  size_t before_launch = 0;
  uint64_t stream = 0;
  std::unique_ptr<device::MemoryOp> op;
  const char* call = nullptr;
  bool repeats = true;  ///< submitted again on later passes (not a copy to the host)
};

/// Where a later pass's submissions stand (range_memops.cpp): the item submitted last, which an
/// item on another stream waits for.
struct PassCursor {
  device::Launch* launch = nullptr;
  device::MemoryOp* op = nullptr;
  uint64_t stream = 0;
  bool any = false;
  Status wait(uint64_t timeout_ms) const;
};

/// Memory the application allocated inside a replayed range: its content at the allocation,
/// saved then, is put back before every later pass (range_memops.cpp).
/// Device memory a range saved at a point of its own and puts back whole or by digest: the regions
/// (live → storage) and one digest per chunk (range_memops.cpp).
struct RangeSaved {
  device::Storage storage{};
  std::vector<device::CopyRegion> copies;
  std::vector<uint64_t> digests;
  uint64_t bytes = 0;
  bool saved = false;
};

struct RangeAllocation {
  uint64_t base = 0, size = 0;
  device::Storage storage{};
  std::vector<device::CopyRegion> copies;  ///< one region: live = base
  std::vector<uint64_t> chunks;            ///< every chunk of it (restored whole)
};

/// A range of launches being recorded (pass 0) or replayed.
struct RangeState {
  kreplay_range_info_t info{};
  /// The thread that opened it. Other threads' launches and memory calls join too, on a stream
  /// that all threads share (range_joins_thread); on a thread's own stream only this thread's do.
  uint64_t owner_thread = 0;
  /// The first launch's Launch::context_key(): a launch in another context closes the range (its
  /// passes run under one Device::bind_launch_context).
  uint64_t context = 0;
  /// A tool asked (CONFIG ENTER, thread_bound) that only owner_thread's work join.
  bool thread_bound = false;
  kreplay_correlation_id_t correlation{};
  kreplay_range_replay_pass_count_cb_t pass_count = nullptr;
  kreplay_range_replay_continue_cb_t replay_continue = nullptr;
  kreplay_user_data_t user_data{};
  bool config_fired = false;
  Plan plan;
  uint64_t pass = 0;
  std::vector<std::unique_ptr<RangeLaunch>> launches;
  std::vector<uint64_t> pre_active;
  std::vector<std::pair<uint64_t, bool>> overrides;
  Snapshot snapshot;
  /// A launch that uses the device heap is a range of its own: its full snapshot is followed by a
  /// save of the heap (heap_saved), put back after every restore (device_heap.cpp).
  bool heap = false;
  bool heap_saved = false;
  const char* heap_kernel = nullptr;          ///< its kernel's name, for the message when it cannot
  device::CounterSet* counter_set = nullptr;  ///< the current pass's counter session
  /// Index of the first launch the session counts: on pass 0 the session starts at the first
  /// launch a tool counts (launches before it were not selected); on later passes at launch 0.
  size_t counted_from = 0;
  bool counter_session_tried = false;  ///< pass 0 tried to start a session (even if it failed)
  Status counter_failure;              ///< the current pass's session could not start or be read
  device::PassTiming pass_timing{};
  kreplay_range_outcome_record_t outcome{};
  std::vector<kreplay_replay_interval_t> intervals;
  std::vector<uint64_t> dispatch_ids;
  /// The range is one graph launch (counted as one workload; closed at the launch's exit).
  bool whole_graph = false;
  /// Decided when the range opened (a graph that cannot be run again): pass 0 only, declined.
  kreplay_decline_reason_t declined = KREPLAY_DECLINE_REASON_NONE;
  /// A launch that reads mapped host memory, in a range of its own: pass 0 (its own run) is not
  /// counted and is waited for at most Options::host_wait_ms (else declined WAITS_FOR_HOST).
  bool probe = false;
  /// A launch of the range points into managed memory: the host may read what it wrote with no
  /// call kreplay sees, so a synchronization closes the range.
  bool host_observable = false;
  /// The device's mapped host allocations as the range opened (base, size): the snapshot holds
  /// them, and the host may write them while the range is open with no call kreplay sees.
  std::vector<std::pair<uint64_t, uint64_t>> host_mapped;
  /// What changed in them by the range's close (the host's writes, and the launches' own of the
  /// application's pass): put back after the last pass, so the restores do not undo it.
  std::vector<std::pair<uint64_t, std::vector<std::byte>>> host_kept;
  /// --cache-control all in a replayed range: the caches are flushed before every launch of every
  /// pass (flush_before_launch), as kernel replay starts every launch cold; the first launch's
  /// flush too comes after the pass's counter session began, instead of one before the pass.
  /// Decided when the range opens, so every pass of its counter collection flushes alike.
  bool flush_launches = false;
  /// The stream of the range's last launch. A launch on another stream joins only when that
  /// stream waited for an event recorded here after the last launch (range_stream_wait).
  uint64_t stream = 0;
  std::vector<uint64_t> chain_events;     ///< events recorded on `stream` after its last launch
  std::vector<uint64_t> ordered_streams;  ///< streams that waited for one of chain_events
  /// How the range's entry state was saved (write_bounded.cpp).
  WriteSetWindow ws;
  /// The range its first launch closed (KREPLAY_RANGE_CLOSE_WRITE_SET): learns this range's
  /// writes too once they are measured (range_close.cpp).
  std::optional<RangeCut> cut;
  /// Memory operations that joined the range, in the order the application made them.
  std::vector<RangeMemop> memops;
  /// Host bytes captured for the range's host-to-device copies (RangeOptions::capture_bytes).
  uint64_t captured_bytes = 0;
  /// Memory allocated inside the range, saved at its allocation.
  std::vector<RangeAllocation> allocations;
  /// Frees the application made inside the range, run after its last pass (the memory stays
  /// valid for the passes and is not handed out again meanwhile), in the order they were made.
  std::vector<std::function<void()>> deferred_frees;
  /// Their addresses: an allocation inside the range never overlaps them while deferred.
  std::vector<uint64_t> deferred_bases;
  /// Memory calls that stayed inside the range (memsets, copies, allocations, frees).
  uint64_t memory_calls = 0;
  /// A copy to the host joined (RangeOptions::join_host_reads): the host has read what the
  /// application's pass wrote, so the device memory that pass left (first_pass) is saved before
  /// the first restore and put back after the last pass.
  bool host_read = false;
  RangeSaved first_pass;
};

}  // namespace kreplay::replay
