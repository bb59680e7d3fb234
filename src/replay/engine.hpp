// The replay engine: the window and pass loop of DESIGN.md §2, above the Device seam.
//
// A backend intercepts a launch and calls, on the launching thread:
//
//   DispatchState* st = engine.enter(launch);    // before the application's own submission
//   ... submit the launch (this is pass 0) ...
//   engine.exit(st, submitted_ok);               // after it
//
// enter() reserves the dispatch id, runs CONFIG, and — when the tool asks for replay — opens the
// window: it takes the device's window lock (other threads' launches and memory operations wait),
// drains the device, snapshots tracked memory and fires PASS 0 ENTER. exit() waits for pass 0,
// then runs the remaining passes (restore, PASS ENTER, relaunch, wait, PASS EXIT), leaves the last
// pass unrestored, fires CONFIG EXIT with the outcome and closes the window.
//
// The pass loop does not know what a pass executes: it drives a PassWork (submit again, wait).
// Kernel replay's PassWork is the one intercepted launch (LaunchWork); a range of launches
// (DESIGN.md §2b) supplies one that resubmits every recorded launch in order. Snapshot, restore,
// local context control and the hooks are the same for both.
//
// Tool callbacks are reached through Hooks, which the SDK implements; the engine knows nothing of
// contexts or tools beyond that interface. A range's state and options are in range_state.hpp, a
// window's write set in write_set.hpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "kreplay/kernel_replay.h"
#include "kreplay/range_replay.h"
#include "replay/inventory.hpp"
#include "replay/local_context.hpp"
#include "replay/plan.hpp"
#include "replay/range_state.hpp"
#include "replay/snapshot.hpp"
#include "replay/write_set.hpp"

namespace kreplay::replay {

struct Options {
  kreplay_snapshot_scope_t scope = KREPLAY_SNAPSHOT_SCOPE_ALL;
  uint64_t max_snapshot_bytes = 0;    ///< 0 = storage capacity only
  uint64_t drain_timeout_ms = 60000;  ///< drain and per-pass completion timeout
  bool verify_restore = false;        ///< re-compare after every pass
  uint64_t chunk_bytes = 64 * 1024;   ///< restore granularity
  bool decline_untracked = true;      ///< decline when the device reports untracked memory
  /// Graph launches: run the graph's nodes one at a time after its own execution, each kernel node
  /// a dispatch of its own (--graph-profiling node); false: one dispatch per graph launch.
  bool graph_nodes = true;
  /// A launch that can see mapped host memory runs once first, as a probe: when it does not finish
  /// within this time the application's thread is released and the launch is not replayed (it
  /// may be waiting for the host, which cannot act while kreplay holds its thread).
  uint64_t host_wait_ms = 1000;
  /// --cache-control all: the device's caches are written back and invalidated before every
  /// counted pass (after the restore, before the pass's services start); false: none.
  bool flush_caches = true;
  /// --check-divergence: digest the tracked memory after every pass and compare the passes.
  bool check_divergence = false;
  /// --snapshot: AUTO, FULL or WRITE_SET (DESIGN.md §3; write_bounded.cpp).
  kreplay_snapshot_mode_t snapshot_mode = KREPLAY_SNAPSHOT_MODE_AUTO;
  /// AUTO: a full snapshot that would put more than this many bytes in pinned host memory is not
  /// taken where a write-bounded one can be (the copy over PCIe costs seconds per launch).
  uint64_t auto_host_bytes = 4ull << 30;
  /// Tests only (never set by an option or the environment): false trusts a write-set prediction
  /// without the digests after the application's pass, which shows what the check prevents.
  bool check_write_sets = true;
};

/// A restore made of parts (the snapshot, zeroed chunks, the device heap, a range's allocations):
/// @p total gains @p part's bytes, or becomes its error.
inline void add_restored(Result<uint64_t>& total, const Result<uint64_t>& part) {
  total = part.ok() ? Result<uint64_t>(*total + *part) : part;
}

/// What one pass executes, as the pass loop drives it.
class PassWork {
 public:
  virtual ~PassWork() = default;
  /// Submit the work of a pass again (passes > 0; pass 0 was the application's own submission).
  virtual Status resubmit() = 0;
  /// Wait for the most recent submission; fill its timing.
  virtual Status wait(uint64_t timeout_ms, device::PassTiming* timing) = 0;
};

/// Kernel replay's PassWork: one launch.
class LaunchWork final : public PassWork {
 public:
  explicit LaunchWork(device::Launch* launch) : launch_(launch) {}
  Status resubmit() override { return launch_->relaunch(); }
  Status wait(uint64_t timeout_ms, device::PassTiming* timing) override {
    return launch_->wait(timeout_ms, timing);
  }

 private:
  device::Launch* launch_;
};

/// Everything the engine knows about one logical dispatch while it runs.
struct DispatchState {
  device::Launch* launch = nullptr;
  std::optional<LaunchWork> launch_work;
  PassWork* work = nullptr;  ///< what each pass executes (launch_work for kernel replay)
  kreplay_kernel_dispatch_info_t info{};
  kreplay_correlation_id_t correlation{};
  uint64_t thread_id = 0;

  // CONFIG
  kreplay_kernel_replay_pass_count_cb_t pass_count = nullptr;
  kreplay_kernel_replay_continue_cb_t replay_continue = nullptr;
  kreplay_user_data_t user_data{};
  Plan plan;
  bool config_fired = false;  ///< CONFIG ENTER was delivered (so CONFIG EXIT must follow)

  /// The launch's graph and node (LaunchInfo::graph_id/graph_node), for the payloads.
  uint64_t graph_id = 0;
  uint64_t graph_node = 0;
  /// A graph launch run node by node (Options::graph_nodes): the window is held from enter() and
  /// the graph's entry state saved in `snapshot`; exit() restores it and runs the nodes.
  bool graph_nodes = false;
  /// Decided before CONFIG (a graph whose entry state could not be saved): decline with this.
  kreplay_decline_reason_t forced_decline = KREPLAY_DECLINE_REASON_NONE;
  /// The launch's arguments point into mapped host memory: it may wait for the host. Its own
  /// submission runs first as a probe (no services, no pass); once it finished, memory is
  /// restored and every pass, pass 0 included, is a resubmission. In a single run it is not
  /// counted (counting would synchronize inside its launch and wait for ever).
  bool host_visible = false;
  /// Declined because an earlier launch that may wait for the host still runs: this one may be
  /// queued behind it on the device, so, like a host-visible launch, it is neither counted nor
  /// waited for (waiting would wait for the host, which cannot act while its thread is held).
  bool behind_host_waiter = false;
  /// A host-visible launch of a kernel that waited for the host before (decided once, at enter):
  /// declined at once, and held as a host waiter while it runs.
  bool known_host_waiter = false;
  bool probe = false;
  /// The agent of another device whose memory the launch's arguments point into (0: none): the
  /// launch's snapshot could not restore it, so it is not replayed (PEER_MEMORY).
  uint64_t peer_agent = 0;
  /// Whether completing this launch may depend on the host (host_visible or behind_host_waiter).
  bool may_wait_for_host() const { return host_visible || behind_host_waiter; }

  // Execution
  uint64_t pass = 0;         ///< current pass
  bool window = false;       ///< the pass loop runs
  bool wait_needed = false;  ///< single run: wait for completion (a service needs its end)
  bool reentrant = false;
  /// The window saved the device heap (a launch that uses it; device_heap.cpp): put back before
  /// each later pass, dropped when the window ends.
  bool heap_saved = false;
  kreplay_replay_outcome_record_t outcome{};
  std::vector<kreplay_replay_interval_t> intervals;
  device::PassTiming timing{};  ///< timing of the last completed pass
  uint64_t first_digest = 0;    ///< --check-divergence: the first pass's memory digest

  /// Scratch owned by Hooks (per-pass service state); released by Hooks::end_dispatch.
  void* hook_data = nullptr;

  // Range replay: this launch belongs to a range (its services are driven per range pass).
  bool in_range = false;
  RangeLaunch* range_launch = nullptr;      ///< set on the enter/exit state of the launch
  std::unique_lock<std::mutex> range_lock;  ///< held from enter to exit of a range launch
  /// Counter values of this launch for the current range pass (set by the engine before
  /// after_complete); nullopt when the pass counted nothing.
  std::optional<std::vector<device::CounterValue>> range_values;
  /// The range pass's counter session failed: the launch's counters of this pass are lost.
  Status range_counters_lost;

  // Locks held between enter() and exit().
  std::shared_lock<std::shared_mutex> shared;
  std::unique_lock<std::shared_mutex> exclusive;
  struct DeviceSlot* slot = nullptr;
  std::unique_ptr<LocalContextScope> local;
  Snapshot snapshot;
  /// How the window saved memory (write_bounded.cpp).
  WriteSetWindow ws;
};

/// The SDK side of the engine: delivers callbacks and runs per-pass services.
class Hooks {
 public:
  virtual ~Hooks() = default;
  /// Cheap: could any tool want to see this dispatch (replay, dispatch tracing, counting)?
  virtual bool any_dispatch_service() = 0;
  /// Cheap: is a KERNEL_REPLAY subscriber configured (even if stopped)?
  virtual bool replay_configured() = 0;
  /// CONFIG ENTER: fill st.pass_count, st.replay_continue, st.user_data; set st.config_fired.
  virtual void config_enter(DispatchState& st) = 0;
  /// CONFIG EXIT (only if config_fired), with st.outcome filled.
  virtual void config_exit(DispatchState& st) = 0;
  /// Handles of the globally active contexts (for local context control).
  virtual std::vector<uint64_t> active_contexts() = 0;
  /// PASS ENTER / EXIT for st.pass.
  virtual void pass_enter(DispatchState& st, LocalContextScope& local) = 0;
  virtual void pass_exit(DispatchState& st) = 0;
  /// Before a submission: KERNEL_DISPATCH ENTER and arming of counters. Returns true when some
  /// service needs the completion of this submission (after_complete must then be called).
  virtual bool before_submit(DispatchState& st) = 0;
  /// After the submission completed (st.timing set): counter records, KERNEL_DISPATCH EXIT.
  virtual void after_complete(DispatchState& st) = 0;
  /// The dispatch is over; release st.hook_data.
  virtual void end_dispatch(DispatchState& st) = 0;

  // ---- range replay ----
  /// Cheap: is a RANGE_REPLAY subscriber active?
  virtual bool range_configured() = 0;
  /// CONFIG ENTER / EXIT of a range (fill / read the RangeState's callbacks and outcome).
  virtual void range_config_enter(RangeState& range) = 0;
  virtual void range_config_exit(RangeState& range) = 0;
  /// LAUNCH ENTER: a launch joins the range; returns whether the tool keeps it selected.
  virtual bool range_launch(RangeState& range, DispatchState& launch) = 0;
  /// PASS ENTER / EXIT of a range.
  virtual void range_pass_enter(RangeState& range, LocalContextScope& local) = 0;
  virtual void range_pass_exit(RangeState& range) = 0;
  /// The counter set the services chose for @p launch in before_submit (in a range), or nullptr.
  virtual device::CounterSet* armed_set(DispatchState& launch) = 0;
  /// In a range's later passes the per-pass services (PC sampling, ...) that before_submit
  /// gathered for @p launch are not armed there, as every launch's before_submit comes before
  /// the first resubmission and one launch at a time can hold a service. The engine arms them
  /// right before the launch's resubmission (returns whether any was armed), waits for the
  /// launch, and ends them (range_services_end) before the next launch goes.
  virtual bool range_services_begin(DispatchState& launch) {
    (void)launch;
    return false;
  }
  virtual void range_services_end(DispatchState& launch) { (void)launch; }

  /// Before a window opens (kernel replay: before the snapshot; range replay: as a range opens,
  /// @p range true), with the device's window held exclusively and the device neither capturing
  /// nor behind a host waiter: let the device's per-pass services prepare it
  /// (device::PassService::prepare), then its counters pay a one-time start-up cost now
  /// (device::CounterBackend::warm_start). Default: nothing.
  virtual void warm_start(DispatchState& st, bool range) {
    (void)st;
    (void)range;
  }
};

struct DeviceSlot {
  uint64_t agent = 0;
  device::Device* device = nullptr;
  std::shared_mutex window_mu;
  StoragePool pool;
  std::mutex pool_mu;
  // Range replay: at most one open range per device.
  std::mutex range_mu;
  std::unique_ptr<RangeState> range;
  std::atomic<bool> range_open{false};
  // Launches that were still running when kreplay let their thread go (WAITS_FOR_HOST): while one
  // is, windows are declined without a drain that would wait for it.
  std::mutex waiters_mu;
  std::vector<std::unique_ptr<device::Launch>> host_waiters;
  /// Whether a launch released with WAITS_FOR_HOST is still running (forgets finished ones).
  bool host_waiter_running();
  // Write-bounded snapshots (write_bounded.cpp), used with the window held exclusively.
  WriteSets launch_writes;  ///< per kernel (kernel replay)
  WriteSets range_writes;   ///< per first launch of a range (range replay)
  /// The write-bounded range the open range's first launch cut (range_mu held).
  std::optional<RangeCut> range_cut;
  /// The device's digest baseline holds the tracked memory as it is now, in this layout, when
  /// nothing changed memory since (Engine::memory_epoch_ still baseline_epoch).
  bool baseline_valid = false;
  uint64_t baseline_epoch = 0;
  std::vector<device::CopyRegion> baseline_layout;
  uint64_t baseline_chunk_bytes = 0;
  int baseline_support = -1;  ///< -1 not asked yet, 0 the device keeps none, 1 it does
};

/// Counts since the process started (for progress lines and benchmarks).
struct EngineStats {
  std::atomic<uint64_t> launches{0};
  std::atomic<uint64_t> replayed{0};
  std::atomic<uint64_t> declined{0};
  std::atomic<uint64_t> passes{0};
  std::atomic<uint64_t> cache_flushes{0};     ///< Device::flush_caches calls that succeeded
  std::atomic<uint64_t> baselines{0};         ///< digests of all tracked memory taken before a pass
  std::atomic<uint64_t> baselines_reused{0};  ///< ... reused from the window before instead
};

namespace detail {
/// The devices whose window the calling thread holds (engine.cpp).
std::vector<DeviceSlot*>& thread_windows();
}  // namespace detail

/// A collective communication kernel (NCCL/RCCL), by name: replaying it alone would wait for
/// peers that do not replay. Decided once per kernel, when it is registered
/// (KernelEntry::dispatch_flags), not per launch.
bool is_collective_kernel(const char* name);

/// Once per process: launches over peer memory are not replayed (PEER_MEMORY).
void warn_peer_memory(const kreplay_kernel_dispatch_info_t& info);

/// What a decline reason means, in words for messages ("graph with a host-function node").
const char* reason_text(kreplay_decline_reason_t reason);

class Engine {
 public:
  Engine(Hooks& hooks, MemoryInventory& inventory) : hooks_(hooks), inventory_(inventory) {}

  /// Register a device (before launches reach it). @p agent is its agent handle.
  void add_device(uint64_t agent, device::Device* dev);

  void set_options(const Options& options);
  Options options() const;

  /// Before the application's own submission. Never returns nullptr.
  DispatchState* enter(device::Launch& launch);
  /// After the application's own submission (@p submitted: the call succeeded).
  void exit(DispatchState* st, bool submitted);

  /// Held by application threads around memory operations (copies, memsets, frees) so they wait
  /// while another thread's window is open on the device. No-op on the window's own thread.
  class MemoryGuard {
   public:
    MemoryGuard() = default;
    explicit MemoryGuard(std::shared_lock<std::shared_mutex> lock) : lock_(std::move(lock)) {}

   private:
    std::shared_lock<std::shared_mutex> lock_;
  };
  /// @p call names the API call the guard is for (kept as what closed a range; a string that
  /// outlives the process's ranges, e.g. CUPTI's function name), or nullptr.
  MemoryGuard guard_memory(uint64_t agent, const char* call = nullptr);
  /// Test seam: guard_memory calls @p probe after closing ranges and before taking the window,
  /// so a test can open a range on another thread exactly there. Not for production use; set it
  /// while no memory operation is in flight.
  void set_guard_probe_for_test(std::function<void()> probe) { guard_probe_ = std::move(probe); }
  /// Test seam: forget every write set learned on @p agent and the digest baseline, as in a new
  /// process. Call while no launch is in flight.
  void forget_write_sets_for_test(uint64_t agent);

  /// Is a replay window open on this thread (for any device)?
  static bool in_window();

  // ---- range replay (DESIGN.md §2b) ----
  /// Before any call, from any thread, through which the host could observe or change device
  /// memory: closes the open range of @p agent (0 = every device), running its remaining passes.
  /// No-op when no range is open, and for kreplay's own calls inside the range machinery.
  /// @p call: as for guard_memory (the range outcome's close_call).
  void range_barrier(uint64_t agent, kreplay_range_close_reason_t why, const char* call = nullptr);
  /// A plain synchronization of @p agent's work (stream, event or device synchronize, a stream or
  /// event query): the host observes no memory through it, so a range whose launches can have
  /// written no host-visible memory stays open across it (RangeOptions::span_syncs); any other
  /// range closes (KREPLAY_RANGE_CLOSE_SYNCHRONIZE).
  void range_sync(uint64_t agent, const char* call = nullptr);
  /// The application recorded @p event on @p stream / made @p stream wait for @p event: a stream
  /// that waited for an event recorded after the open range's last launch may join the range.
  void range_event_record(uint64_t agent, uint64_t stream, uint64_t event);
  void range_stream_wait(uint64_t agent, uint64_t stream, uint64_t event);
  /// True on a thread inside kreplay's range machinery (its calls neither join nor close ranges).
  static bool in_range_machinery();
  /// The backend's interception marks the application's device API calls on this thread (enter,
  /// exit; they nest): a thread inside one may hold the driver's locks, so close_open_ranges
  /// refuses to make device calls from it (a signal handler that interrupted the call).
  static void app_call_enter();
  static void app_call_exit();
  /// For a process about to end outside a normal exit (a fatal signal's handler): close every
  /// open range now, as range_barrier would (its remaining passes run, its records are
  /// delivered), waiting at most @p timeout_ms for a range another thread is busy with.
  /// NOT_AVAILABLE (nothing closed) when this thread is inside the range machinery, a replay
  /// window or an application device call; ERROR when a range stayed busy. @p open_launches
  /// (may be null) receives the launches of the ranges that were open.
  Status close_open_ranges(kreplay_range_close_reason_t why, uint64_t timeout_ms,
                           uint64_t* open_launches = nullptr);
  /// A marker the application set: cudaProfilerStart/Stop or an NVTX range push/pop (@p name is
  /// the range's name, for a pop the name of the range it closes).
  enum class MarkerEvent { kProfilerStart, kProfilerStop, kNvtxPush, kNvtxPop };
  void range_marker(MarkerEvent event, std::string_view name);

  // ---- memory calls inside a range (range_memops.cpp) ----
  /// What an application's memory operation does, as range replay needs to know it.
  struct MemoryCall {
    enum class Kind {
      kMemset,
      kCopyDeviceToDevice,
      kCopyHostToDevice,
      kCopyDeviceToHost,  ///< RangeOptions::join_host_reads; the application's pass only
    } kind = Kind::kMemset;
    uint64_t stream = 0;  ///< the stream it is ordered on (as LaunchInfo::stream)
    /// The memory it writes: [dst, dst + bytes), device memory (kCopyDeviceToHost: host memory).
    uint64_t dst = 0;
    uint64_t bytes = 0;
    /// kCopyDeviceToDevice and kCopyDeviceToHost: the device memory it reads, [src, src + bytes);
    /// kCopyHostToDevice: the host bytes it reads (captured by the backend when the call is made).
    uint64_t src = 0;
    const char* call = nullptr;  ///< the API call (close_call when it closes the range)
  };
  enum class MemoryJoin {
    kNone,    ///< no range took it (one that was open closed first): an ordinary memory call
    kRecord,  ///< it joins the open range: hand its resubmittable copy to range_memory_done
    kJoined,  ///< it joins a range that runs no further pass: nothing to record
  };
  /// Before the application's memory operation @p op on @p agent, from the application's thread.
  /// Unless kNone, the range is held (other threads' calls wait) until range_memory_done, which
  /// the backend calls once the application's call returned; it then skips guard_memory.
  MemoryJoin range_memory_begin(uint64_t agent, const MemoryCall& op);
  /// After a call range_memory_begin let join. @p ok: the call succeeded; @p recorded (kRecord):
  /// its copy, which the range's later passes submit again (nullptr: it cannot be, and the range
  /// closes after it).
  void range_memory_done(uint64_t agent, bool ok, std::unique_ptr<device::MemoryOp> recorded);
  /// Before the application allocates memory on @p agent: an open range that takes memory calls
  /// stays open (range_allocated then saves the memory), else it closes.
  void range_allocation_begin(uint64_t agent, const char* call);
  /// After an allocation of [base, base + size) succeeded (the inventory tracks it): inside a
  /// replayed range the memory is part of the range's state from now on (its
  /// content saved now, put back before every later pass); where it cannot be saved the range
  /// closes (none of its launches can have touched this memory yet).
  /// @p save (may be empty) copies the memory into the storage given, in place of
  /// Device::snapshot: a device whose snapshot is a kernel that the range's open counter session
  /// would count as a launch (CUDA) copies with something the session does not count, and a
  /// stream-ordered block is read only once its stream got there. Called only when a save is made.
  void range_allocated(uint64_t agent, uint64_t base, uint64_t size, const char* call,
                       const std::function<Status(const device::Storage&)>& save = {});
  /// Before the application frees @p base on @p agent. True: the free is deferred until the
  /// range's last pass ended, when the engine calls @p free (the backend frees nothing now).
  /// False: a range that was open closed first (or none was); the backend frees now.
  bool range_defer_free(uint64_t agent, uint64_t base, std::function<void()> free,
                        const char* call);
  void set_range_options(const RangeOptions& options);
  RangeOptions range_options() const;

  /// Give all snapshot storage back (e.g. when the application runs short of memory).
  void release_storage(uint64_t agent);
  /// An allocation of the application's on @p agent found too little memory: give kreplay's
  /// snapshot storage back (waiting for a window another thread holds) so the allocation can be
  /// retried. False when nothing was held, or when this thread holds a window (its own storage is
  /// in use). Later windows allocate storage again as they need it.
  bool release_storage_for_application(uint64_t agent);
  /// The snapshot storage held on @p agent, now and at its peak (kreplay_query_replay_storage).
  /// False for an unknown agent.
  bool replay_storage(uint64_t agent, kreplay_replay_storage_t* out);

  const EngineStats& stats() const { return stats_; }
  MemoryInventory& inventory() { return inventory_; }
  DeviceSlot* slot(uint64_t agent);

 private:
  void open_window(DispatchState& st);
  void decline(DispatchState& st, kreplay_decline_reason_t reason);
  void begin_single_run(DispatchState& st);
  void finish_window(DispatchState& st);
  /// Passes 0.. of an open window (pass 0 already submitted): wait, services, continue, restore,
  /// resubmit, until the loop ends. Fills st.outcome.
  void run_passes(DispatchState& st, bool pass0_submitted);
  /// A host-visible launch's probe (its own submission): wait up to Options::host_wait_ms; on
  /// time, restore and submit pass 0 (true); otherwise decline WAITS_FOR_HOST (false).
  bool run_probe(DispatchState& st);
  /// --cache-control all: flush @p dev's caches before a counted pass (after the restore, before
  /// PASS ENTER and the pass's services). A device that cannot is reported once. True when the
  /// caches were flushed.
  bool flush_before_pass(device::Device& dev);
  /// Whether windows on @p dev are declined for memory kreplay does not track (Options::
  /// decline_untracked and the device holds some); says so once per process.
  bool holds_untracked_memory(device::Device& dev);
  /// Range replay, RangeState::flush_launches: before launch @p index of @p r's current pass is
  /// submitted, wait for the launch before it (if any), flush the caches, and tell the counter
  /// backend where the flush falls among the pass's counted launches (range_flush).
  void flush_before_launch(DeviceSlot& slot, RangeState& r, size_t index);
  /// Wait for launch @p index - 1 of @p r's current pass (nothing for the first); false, said
  /// once, when it did not complete in time.
  bool wait_for_launch_before(RangeState& r, size_t index);
  /// Before a replayed range's first restore: keep what changed in its mapped host memory
  /// (RangeState::host_kept), which close_range puts back after the last pass.
  void keep_host_writes(device::Device& dev, RangeState& r);
  /// --check-divergence, after pass st.pass completed: digest the snapshot's memory and compare
  /// it with the first pass's; a pass that differs is counted in outcome.diverged_passes.
  void check_divergence(DispatchState& st);
  void release(DispatchState* st);
  // graphs (graph.cpp)
  /// Whether the graph launch @p st runs node by node, and if so: window, drain, entry snapshot.
  bool begin_graph_nodes(DispatchState& st);
  /// After the application's own graph launch: restore the entry state and run the graph's nodes,
  /// each kernel node a dispatch of its own.
  void run_graph_nodes(DispatchState& st, bool submitted);
  /// Drain, check for untracked memory and snapshot what @p st may touch into @p snapshot; the
  /// window lock is held. Returns NONE or the reason to decline (after one warning).
  kreplay_decline_reason_t save_entry_state(DispatchState& st, Snapshot& snapshot,
                                            bool write_bounded = false);
  // write-bounded snapshots (write_bounded.cpp); the window is held
  /// Something other than a write-bounded window may have changed device memory: a baseline
  /// kept from before no longer holds it.
  void memory_changed() { memory_epoch_.fetch_add(1, std::memory_order_acq_rel); }
  /// Whether @p slot's device keeps a digest baseline (asked once).
  bool baseline_supported(DeviceSlot& slot);
  /// How a window over @p regions saves memory under the options, for @p ws.kernel / ws.args
  /// (@p range: a range's first launch): fills ws.kind, ws.layout and, for kWriteSet, ws.saved.
  void choose_save(DeviceSlot& slot, const std::vector<Region>& regions, bool range,
                   bool allow_write_set, WriteSetWindow& ws);
  /// Makes @p ws (its layout set) a write-set save: what the write sets learned predict
  /// (ws.predicted true), else, or where they predict nothing, the chunks its pointer arguments
  /// point into. Returns ws.predicted.
  bool predict_save(DeviceSlot& slot, bool range, WriteSetWindow& ws);
  /// The device's digest baseline of ws.layout, reusing the slot's when memory has not changed
  /// since it was taken.
  Status take_baseline(DeviceSlot& slot, const WriteSetWindow& ws);
  /// After the application's pass of a kWriteSet window: what changed since the baseline (which
  /// then holds memory as it is now); learns it. @p covered: whether every changed chunk lies
  /// inside ws.saved or held zeros (ws.zeroed). Errors leave @p covered false.
  Status measure_writes(DeviceSlot& slot, WriteSetWindow& ws, bool range, uint64_t* changed_bytes,
                        bool* covered);
  /// After the last pass of a replayed kWriteSet window: whether the passes after the first
  /// wrote only inside ws.saved (said loudly when not); the baseline then holds memory as it is.
  bool verify_last_pass(DeviceSlot& slot, WriteSetWindow& ws, uint64_t id, const char* name);
  /// A full window's first restore found these chunks changed: learn them (kFull windows).
  void learn_full(DeviceSlot& slot, WriteSetWindow& ws, bool range, Snapshot& snapshot,
                  uint64_t* changed_bytes);
  /// The baseline of @p slot holds memory as it is now (after a measured window).
  void keep_baseline(DeviceSlot& slot, const WriteSetWindow& ws);
  /// Between passes of a kWriteSet window, after @p snapshot's restore: zero ws.zeroed again.
  /// Returns the bytes written.
  Result<uint64_t> restore_zeroed(DeviceSlot& slot, const WriteSetWindow& ws);
  /// kWriteSet: copy ws.saved into @p snapshot (the storage pool places it); the placement used.
  Result<Placement> save_extents(DeviceSlot& slot, const WriteSetWindow& ws, Snapshot& snapshot);
  /// A kernel window's kWriteSet save (baseline, saved chunks; fills the outcome); NONE or a
  /// decline reason.
  kreplay_decline_reason_t save_write_set(DispatchState& st, Snapshot& snapshot, uint64_t t0);
  // The device heap of a launch that uses it (device_heap.cpp), in kernel and range replay: saved
  // after the window's snapshot (a device may save all of its memory with it, kreplay's storage
  // included), put back after each restore of the snapshot, dropped at the window's end.
  /// Save @p dev's heap, adding its bytes to @p bytes, its time to @p ns (may be null) and its
  /// interval to @p intervals; false (said once, naming @p kernel) when the device cannot.
  static bool save_device_heap(device::Device& dev, const char* kernel, uint64_t* bytes,
                               uint64_t* ns, std::vector<kreplay_replay_interval_t>* intervals);
  /// Put the saved heap back; the bytes, or an error that says it was the heap.
  static Result<uint64_t> restore_device_heap(device::Device& dev);
  void drop_device_heap(DispatchState& st);
  // ranges (range.cpp); the callers hold slot.range_mu
  void range_enter(DispatchState& st);
  void range_exit(DispatchState& st, bool submitted);
  bool open_range(DeviceSlot& slot, DispatchState& first,
                  kreplay_decline_reason_t declined = KREPLAY_DECLINE_REASON_NONE);
  /// A replayed range's entry state (drain, snapshot of every tracked region), with the window
  /// held; NONE when saved, else why the range is declined.
  /// @p write_bounded: the range may save only its predicted write set (not a probe range).
  kreplay_decline_reason_t save_range_entry(DeviceSlot& slot, RangeState& r, bool write_bounded);
  /// save_range_entry's full snapshot of @p regions into @p placement.
  kreplay_decline_reason_t save_range_full(DeviceSlot& slot, RangeState& r,
                                           const std::vector<Region>& regions, Placement placement,
                                           uint64_t t0,
                                           std::unique_lock<std::shared_mutex>& window);
  void add_to_range(DeviceSlot& slot, DispatchState& st);
  /// Whether a write-bounded range @p r has saved what @p st wrote when it opened a range before
  /// (true when it never did: nothing is known of it alone).
  bool range_saves_joiner(const DeviceSlot& slot, const RangeState& r,
                          const DispatchState& st) const;
  void close_range(DeviceSlot& slot, kreplay_range_close_reason_t why, const char* call = nullptr);
  /// A measured write-bounded range: keep it as the cut when @p why is WRITE_SET; when it was
  /// opened by the launch that cut the range before, that range's key learns both ranges' writes.
  void learn_range_cut(DeviceSlot& slot, RangeState& r, kreplay_range_close_reason_t why);
  // memory calls inside a range (range_memops.cpp); slot.range_mu held
  /// Why a launch or memory call on @p stream, made now on this thread, cannot join @p r for
  /// the thread it comes from (KREPLAY_RANGE_CLOSE_OTHER_THREAD), or NONE: the range's own thread
  /// joins on any stream; another thread only on a stream every thread shares, since the same
  /// handle of a thread's own stream (Device::thread_stream) names another stream there.
  kreplay_range_close_reason_t range_thread_blocker(const DeviceSlot& slot, const RangeState& r,
                                                    uint64_t stream) const;
  /// Whether @p r may take a memory call at all (joining is on, and the range is not one that
  /// closes at its launch's exit).
  bool range_takes_memory_calls(const RangeState& r) const;
  /// Why @p op cannot join @p r (the close reason), or NONE.
  kreplay_range_close_reason_t memop_blocker(const DeviceSlot& slot, const RangeState& r,
                                             const MemoryCall& op) const;
  /// A later pass: submit the memory operations recorded before launch @p index (ordered after
  /// the item before on another stream by a wait). False when one failed.
  bool resubmit_memops(RangeState& r, size_t index, PassCursor& cursor);
  /// Wait for the memory operations recorded before launch @p index (all for SIZE_MAX).
  bool wait_memops(RangeState& r, size_t index);
  /// Before a later pass: put the range's allocations back as they were saved; bytes written.
  Result<uint64_t> restore_allocations(device::Device& dev, RangeState& r);
  /// After the range's last pass: the deferred frees, then the allocations' storage.
  void end_range_memory(device::Device& dev, RangeState& r);
  /// A range the host read from (RangeState::host_read), after the application's pass and before
  /// the first restore: save the device memory that pass changed (and the range's allocations).
  Status save_first_pass(device::Device& dev, RangeState& r);
  /// After the last pass: put back what save_first_pass saved where a pass left it otherwise, and
  /// free its storage. Returns the bytes written.
  Result<uint64_t> put_back_first_pass(device::Device& dev, RangeState& r);
  /// Whether the open range @p r of @p slot stays open across a plain synchronization.
  bool range_spans_sync(const DeviceSlot& slot, const RangeState& r) const;
  /// The slots of @p agent (0: all) that have a range open.
  std::vector<DeviceSlot*> open_range_slots(uint64_t agent);
  bool range_markers_allow() const;

  Hooks& hooks_;
  MemoryInventory& inventory_;
  mutable std::mutex options_mu_;
  Options options_;
  std::map<uint64_t, std::unique_ptr<DeviceSlot>> slots_;  // written before launches only
  mutable std::shared_mutex slots_mu_;
  std::atomic<uint64_t> next_dispatch_id_{1};
  std::atomic<uint64_t> next_correlation_id_{1};
  std::atomic<uint64_t> next_range_id_{1};
  mutable std::mutex range_options_mu_;
  RangeOptions range_options_;
  std::atomic<bool> profiler_active_{false};
  std::atomic<uint64_t> memory_epoch_{0};
  std::atomic<int64_t> nvtx_depth_{0};
  EngineStats stats_;
  std::function<void()> guard_probe_;  // set_guard_probe_for_test
  // Kernels one of whose launches did not finish its probe (WAITS_FOR_HOST): their later launches
  // are declined at once instead of waiting for the probe again.
  std::mutex host_waiting_mu_;
  std::set<uint64_t> host_waiting_kernels_;

 public:
  /// A launch of `info` did not finish its probe within `waited_ms`: keep `running` on the slot
  /// until it completes and, with `mark_kernel`, say so once and remember its kernel (its later
  /// host-visible launches are declined at once).
  void hold_host_waiter(DeviceSlot& slot, const kreplay_kernel_dispatch_info_t& info,
                        std::unique_ptr<device::Launch> running, uint64_t waited_ms,
                        bool mark_kernel = true);
  bool is_host_waiting_kernel(uint64_t kernel_id);
};

}  // namespace kreplay::replay
