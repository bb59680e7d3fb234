#include "replay/engine.hpp"

#include <algorithm>
#include <cstring>

#include "common/exit_safe.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"

namespace kreplay::replay {
namespace {

// Per-thread engine state: a stack of in-flight dispatches (a tool may launch from inside a pass,
// which nests a dispatch) and the devices whose window this thread holds.
struct ThreadState {
  std::vector<std::unique_ptr<DispatchState>> pool;
  size_t depth = 0;
  std::vector<DeviceSlot*> windows;

  DispatchState* acquire() {
    if (depth == pool.size()) pool.push_back(std::make_unique<DispatchState>());
    DispatchState* st = pool[depth++].get();
    *st = DispatchState();
    return st;
  }
  void release(DispatchState* st) {
    KR_CHECK_MSG(depth > 0 && pool[depth - 1].get() == st, "dispatches must end in LIFO order");
    --depth;
  }
  bool has_window(const DeviceSlot* slot) const {
    return std::find(windows.begin(), windows.end(), slot) != windows.end();
  }
  void drop_window(const DeviceSlot* slot) {
    auto it = std::find(windows.begin(), windows.end(), slot);
    if (it != windows.end()) windows.erase(it);
  }
};

// Exit-safe: a range closed by an exit handler opens and drops its window here.
ThreadState& tls() { return exit_safe_thread_local<ThreadState>(); }

}  // namespace

const char* reason_text(kreplay_decline_reason_t r) {
  switch (r) {
    case KREPLAY_DECLINE_REASON_INVALID_PLAN: return "pass count 0 without a continue callback";
    case KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE: return "snapshot does not fit";
    case KREPLAY_DECLINE_REASON_DRAIN_TIMEOUT: return "earlier work on the device did not finish";
    case KREPLAY_DECLINE_REASON_REENTRANT_LAUNCH: return "launched from inside a replay window";
    case KREPLAY_DECLINE_REASON_STREAM_CAPTURE: return "stream is being captured";
    case KREPLAY_DECLINE_REASON_GRAPH_LAUNCH: return "graph launch";
    case KREPLAY_DECLINE_REASON_COLLECTIVE: return "collective communication kernel";
    case KREPLAY_DECLINE_REASON_UNTRACKED_MEMORY: return "device has untracked memory";
    case KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED: return "snapshot copy failed";
    case KREPLAY_DECLINE_REASON_LAUNCH_FAILED: return "launch failed";
    case KREPLAY_DECLINE_REASON_PASS_TIMEOUT: return "a pass did not complete in time";
    case KREPLAY_DECLINE_REASON_DEVICE_HEAP: return "the kernel's module uses the device heap";
    case KREPLAY_DECLINE_REASON_GRAPH_HOST_NODE: return "graph with a host-function node";
    case KREPLAY_DECLINE_REASON_GRAPH_DEVICE_LAUNCH: return "graph made for device launches";
    case KREPLAY_DECLINE_REASON_GRAPH_MEMORY:
      return "graph with memory nodes (as a whole), or one that frees memory it did not allocate";
    case KREPLAY_DECLINE_REASON_WAITS_FOR_HOST: return "the kernel may wait for the host";
    case KREPLAY_DECLINE_REASON_PEER_MEMORY:
      return "an argument points into another device's memory";
    case KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN:
      return "what it writes was not known (learned now)";
    default: return "unknown";
  }
}

std::vector<DeviceSlot*>& detail::thread_windows() { return tls().windows; }

void warn_peer_memory(const kreplay_kernel_dispatch_info_t& info) {
  KR_WARN_ONCE("peer-memory",
               "kernels whose arguments point into another device's memory (peer memory; "
               "first: {}) are not replayed: a snapshot of their own device would not restore "
               "it; they run once",
               info.kernel_name ? info.kernel_name : "?");
}

void Engine::hold_host_waiter(DeviceSlot& slot, const kreplay_kernel_dispatch_info_t& info,
                              std::unique_ptr<device::Launch> running, uint64_t waited_ms,
                              bool mark_kernel) {
  if (running) {
    std::lock_guard lock(slot.waiters_mu);
    slot.host_waiters.push_back(std::move(running));
  }
  if (!mark_kernel) return;
  KR_WARN_ONCE("waits-for-host",
               "dispatch {} ({}) reads mapped host memory and did not finish within {} ms while "
               "kreplay held its thread: it may be waiting for the host, so it is not replayed "
               "(launches like it are counted as declined: waits_for_host; "
               "KREPLAY_HOST_WAIT_MS sets the time)",
               info.dispatch_id, info.kernel_name, waited_ms);
  {
    std::lock_guard lock(host_waiting_mu_);
    host_waiting_kernels_.insert(info.kernel_id);
  }
}

bool Engine::is_host_waiting_kernel(uint64_t kernel_id) {
  std::lock_guard lock(host_waiting_mu_);
  return host_waiting_kernels_.count(kernel_id) != 0;
}

bool DeviceSlot::host_waiter_running() {
  std::lock_guard lock(waiters_mu);
  std::erase_if(host_waiters, [](const auto& l) { return l->completed(); });
  return !host_waiters.empty();
}

void Engine::add_device(uint64_t agent, device::Device* dev) {
  std::unique_lock lock(slots_mu_);
  auto slot = std::make_unique<DeviceSlot>();
  slot->agent = agent;
  slot->device = dev;
  slots_[agent] = std::move(slot);
}

DeviceSlot* Engine::slot(uint64_t agent) {
  std::shared_lock lock(slots_mu_);
  auto it = slots_.find(agent);
  return it == slots_.end() ? nullptr : it->second.get();
}

void Engine::set_options(const Options& options) {
  std::lock_guard lock(options_mu_);
  options_ = options;
}

Options Engine::options() const {
  std::lock_guard lock(options_mu_);
  return options_;
}

bool Engine::in_window() { return !tls().windows.empty(); }

Engine::MemoryGuard Engine::guard_memory(uint64_t agent, const char* call) {
  for (;;) {
    range_barrier(agent, KREPLAY_RANGE_CLOSE_MEMORY, call);
    const bool ranges = hooks_.range_configured();
    if (!hooks_.replay_configured() && !ranges) return {};
    DeviceSlot* s = slot(agent);
    if (s == nullptr || tls().has_window(s)) return {};
    if (guard_probe_) guard_probe_();
    std::shared_lock lock(s->window_mu);
    // Another thread may have opened a range between the barrier and the lock; its snapshot
    // predates this call, so its restore would undo what this call writes: close it as well.
    // (A replayed range takes the window to snapshot, so none opens while the lock is held.)
    if (!ranges || in_range_machinery() || !s->range_open.load(std::memory_order_acquire)) {
      memory_changed();  // the call may change memory: a digest baseline kept from before is stale
      return MemoryGuard(std::move(lock));
    }
  }
}

void Engine::release_storage(uint64_t agent) {
  DeviceSlot* s = slot(agent);
  if (s == nullptr) return;
  std::unique_lock window(s->window_mu);
  std::lock_guard lock(s->pool_mu);
  s->pool.release(*s->device);
}

bool Engine::release_storage_for_application(uint64_t agent) {
  DeviceSlot* s = slot(agent);
  if (s == nullptr || in_window()) return false;
  std::unique_lock window(s->window_mu);
  // An open range's entry state lives in the storage (allocations close ranges before this).
  if (s->range_open.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(s->pool_mu);
  if (s->pool.held_bytes(device::StorageTier::kDevice) == 0 &&
      s->pool.held_bytes(device::StorageTier::kPinnedHost) == 0)
    return false;
  KR_INFO("the application needs device memory kreplay held for snapshots: {} given back",
          format_bytes(s->pool.held_bytes(device::StorageTier::kDevice)));
  s->pool.release(*s->device);
  return true;
}

bool Engine::replay_storage(uint64_t agent, kreplay_replay_storage_t* out) {
  DeviceSlot* s = slot(agent);
  if (s == nullptr) return false;
  std::lock_guard lock(s->pool_mu);
  out->device_bytes = s->pool.held_bytes(device::StorageTier::kDevice);
  out->host_bytes = s->pool.held_bytes(device::StorageTier::kPinnedHost);
  out->device_bytes_peak = s->pool.peak_bytes(device::StorageTier::kDevice);
  out->host_bytes_peak = s->pool.peak_bytes(device::StorageTier::kPinnedHost);
  out->releases = s->pool.releases();
  return true;
}

bool is_collective_kernel(const char* name) {
  // NCCL's (and RCCL's) device kernels: ncclDevKernel_AllReduce_Sum_f32_RING_LL, ncclKernel_...,
  // demangled or inside a mangled name (_Z39ncclDevKernel_...).
  return name != nullptr &&
         (std::strstr(name, "ncclDevKernel") != nullptr || std::strstr(name, "ncclKernel_") != nullptr);
}

DispatchState* Engine::enter(device::Launch& launch) {
  DispatchState* st = tls().acquire();
  const device::LaunchInfo& li = launch.info();
  st->launch = &launch;
  st->launch_work.emplace(&launch);
  st->work = &*st->launch_work;
  auto& info = st->info;
  info.size = sizeof(info);
  info.agent_id = li.agent;
  info.stream_id = li.stream;
  info.dispatch_id = next_dispatch_id_.fetch_add(1, std::memory_order_relaxed);
  info.kernel_id = li.kernel_id;
  info.kernel_name = li.kernel_name;
  info.mangled_name = li.mangled_name;
  info.grid_size = li.grid;
  info.block_size = li.block;
  info.cluster_size = li.cluster;
  info.dynamic_shared_memory_bytes = li.dynamic_shared_bytes;
  info.static_shared_memory_bytes = li.static_shared_bytes;
  info.registers_per_thread = li.registers;
  info.flags = li.flags;
  st->correlation.internal = next_correlation_id_.fetch_add(1, std::memory_order_relaxed);
  st->thread_id = thread_id();
  st->slot = slot(li.agent.handle);
  st->graph_id = li.graph_id;
  st->graph_node = li.graph_node;
  stats_.launches.fetch_add(1, std::memory_order_relaxed);
  st->reentrant = st->slot != nullptr && tls().has_window(st->slot);

  // Another device's memory among the arguments (a graph's: its nodes'): not replayed.
  const std::span<const std::byte> words =
      launch.graph() != nullptr ? std::span<const std::byte>(launch.graph()->node_words)
                                : li.arg_bytes;
  st->peer_agent =
      st->slot != nullptr && !words.empty() ? inventory_.peer_agent(li.agent.handle, words) : 0;
  // A graph launch profiled node by node: the application's own launch runs now, unobserved;
  // exit() runs the nodes again, one dispatch each (graph.cpp).
  if (launch.graph() != nullptr && begin_graph_nodes(*st)) return st;
  st->host_visible = st->slot != nullptr && !li.arg_bytes.empty() &&
                     inventory_.args_point_into(li.agent.handle, li.arg_bytes,
                                                KREPLAY_MEMORY_KIND_HOST_MAPPED);
  st->known_host_waiter = st->host_visible && is_host_waiting_kernel(li.kernel_id);

  if (st->slot && !st->reentrant && hooks_.range_configured()) {
    range_enter(*st);
    return st;
  }
  if (!hooks_.any_dispatch_service()) {
    if (st->slot && !st->reentrant && hooks_.replay_configured())
      st->shared = std::shared_lock(st->slot->window_mu);
    memory_changed();
    return st;
  }

  hooks_.config_enter(*st);
  st->plan = make_plan(st->pass_count, st->replay_continue, st->info, st->user_data);

  auto& out = st->outcome;
  out.size = sizeof(out);
  out.dispatch_id = info.dispatch_id;
  out.agent_id = info.agent_id;
  out.passes_requested = st->plan.requested;
  out.scope = options().scope;

  if (st->plan.invalid) {
    KR_WARN_ONCE("invalid-plan",
                 "a tool returned pass count 0 without a replay_continue callback; the dispatch "
                 "is not replayed (set replay_continue for an indefinite loop, or return N > 1)");
    decline(*st, KREPLAY_DECLINE_REASON_INVALID_PLAN);
  } else if (!st->plan.replay) {
    out.outcome = KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED;
    out.passes_executed = 1;
    hooks_.config_exit(*st);
    begin_single_run(*st);
  } else if (st->slot == nullptr) {
    decline(*st, KREPLAY_DECLINE_REASON_UNTRACKED_MEMORY);
  } else if (st->reentrant) {
    KR_WARN_ONCE("reentrant", "a kernel launched from inside a replay window (by a tool callback) "
                              "runs once and is not replayed");
    decline(*st, KREPLAY_DECLINE_REASON_REENTRANT_LAUNCH);
  } else if (info.flags & KREPLAY_DISPATCH_FLAG_CAPTURED) {
    KR_WARN_ONCE("captured", "launches into a stream under capture are not replayed");
    decline(*st, KREPLAY_DECLINE_REASON_STREAM_CAPTURE);
  } else if (const device::GraphInfo* g = launch.graph();
             g != nullptr && g->whole_decline() != KREPLAY_DECLINE_REASON_NONE) {
    const auto why = g->whole_decline();
    KR_WARN_ONCE(reason_text(why),
                 "{} is not replayed ({}): it would do that once per pass; it runs once, and "
                 "graphs like it are counted as declined",
                 info.kernel_name ? info.kernel_name : "a graph", reason_text(why));
    decline(*st, why);
  } else if (st->forced_decline != KREPLAY_DECLINE_REASON_NONE) {
    decline(*st, st->forced_decline);
  } else if (st->known_host_waiter) {
    decline(*st, KREPLAY_DECLINE_REASON_WAITS_FOR_HOST);  // it waited for the host before
  } else if (st->peer_agent != 0) {
    warn_peer_memory(info);
    decline(*st, KREPLAY_DECLINE_REASON_PEER_MEMORY);
  } else if (info.flags & KREPLAY_DISPATCH_FLAG_COLLECTIVE) {
    KR_WARN_ONCE("collective",
                 "collective communication kernels ({}) are not replayed: the other ranks would "
                 "not take part in the extra passes and the replay would wait for them forever; "
                 "they run once",
                 info.kernel_name ? info.kernel_name : "NCCL");
    decline(*st, KREPLAY_DECLINE_REASON_COLLECTIVE);
  } else {
    open_window(*st);
  }
  return st;
}

void Engine::open_window(DispatchState& st) {
  DeviceSlot& slot = *st.slot;
  st.exclusive = std::unique_lock(slot.window_mu);
  // Before the window and its snapshot, with the device held: the counters' one-time start-up
  // cost (on CUDA the first CUPTI Start after enabling, KREPLAY_WARM_START) is paid on kreplay's
  // own work here, so neither this dispatch's snapshot nor its passes carry it.
  if (!slot.device->capture_active() && !slot.host_waiter_running()) hooks_.warm_start(st, false);
  tls().windows.push_back(&slot);
  st.window = true;
  if (kreplay_decline_reason_t why = save_entry_state(st, st.snapshot, /*write_bounded=*/true);
      why != KREPLAY_DECLINE_REASON_NONE) {
    decline(st, why);
    return;
  }
  st.local = std::make_unique<LocalContextScope>(hooks_.active_contexts());
  if (st.host_visible) {
    // The application's own submission is a probe: pass 0 is the first resubmission.
    st.probe = true;
    return;
  }
  flush_before_pass(*slot.device);
  st.pass = 0;
  hooks_.pass_enter(st, *st.local);
  hooks_.before_submit(st);
}

kreplay_decline_reason_t Engine::save_entry_state(DispatchState& st, Snapshot& snapshot,
                                                  bool write_bounded) {
  DeviceSlot& slot = *st.slot;
  device::Device& dev = *slot.device;
  const Options opt = options();
  uint64_t t0 = now_ns();
  if (dev.capture_active()) {
    // Synchronizing the device now would invalidate the application's capture.
    KR_WARN_ONCE("capture-active", "launches made while another stream of the device is being "
                                   "captured into a graph are not replayed; they run once");
    return KREPLAY_DECLINE_REASON_STREAM_CAPTURE;
  }
  if (slot.host_waiter_running()) {
    // Draining would wait for a launch that waits for the host, which cannot act now.
    KR_WARN_ONCE("host-waiter",
                 "dispatch {} ({}) not replayed: an earlier launch that may wait "
                 "for the host is still running; launches are not replayed (nor "
                 "counted, nor waited for) until it finishes",
                 st.info.dispatch_id, st.info.kernel_name);
    st.behind_host_waiter = true;
    return KREPLAY_DECLINE_REASON_WAITS_FOR_HOST;
  }
  if (Status s = dev.drain(opt.drain_timeout_ms); !s.ok()) {
    KR_WARN("dispatch {} ({}): {}; running it once", st.info.dispatch_id, st.info.kernel_name,
            s.message());
    return KREPLAY_DECLINE_REASON_DRAIN_TIMEOUT;
  }
  if (holds_untracked_memory(dev)) return KREPLAY_DECLINE_REASON_UNTRACKED_MEMORY;
  // A graph launch reaches memory through its nodes, not through argument bytes: all of it.
  const device::GraphInfo* graph = st.launch->graph();
  // A launch that uses the device heap saves the heap after its snapshot (save_device_heap); the
  // device may save all of its memory with the heap, so the snapshot is a full one, not a write
  // set whose digests a heap restore could put back.
  const bool heap = graph == nullptr && (st.info.flags & KREPLAY_DISPATCH_FLAG_DEVICE_HEAP) != 0;
  if (heap) write_bounded = false;
  const bool args_scope = opt.scope == KREPLAY_SNAPSHOT_SCOPE_ARGS && graph == nullptr;
  std::vector<Region> regions = args_scope
                                    ? inventory_.regions_for_args(slot.agent, st.launch->info().arg_bytes)
                                    : inventory_.regions(slot.agent);
  // What the launch is known by to its write sets: its kernel and arguments, or for a graph the
  // graph and the words of its nodes.
  WriteSetWindow& ws = st.ws;
  if (graph != nullptr) {
    ws.kernel = graph->graph_id | (1ull << 63);
    ws.args.assign(graph->node_words.begin(), graph->node_words.end());
  } else {
    ws.kernel = st.info.kernel_id;
    ws.args.assign(st.launch->info().arg_bytes.begin(), st.launch->info().arg_bytes.end());
  }
  choose_save(slot, regions, /*range=*/false, write_bounded && !args_scope && !st.host_visible, ws);
  if (ws.kind != SaveKind::kFull) return save_write_set(st, snapshot, t0);
  slot.baseline_valid = false;  // the window's passes change memory unmeasured
  Result<Placement> placement = [&] {
    std::lock_guard lock(slot.pool_mu);
    return slot.pool.place(dev, regions, opt.chunk_bytes, opt.max_snapshot_bytes);
  }();
  if (!placement.ok() && write_bounded && !args_scope && !st.host_visible &&
      opt.snapshot_mode == KREPLAY_SNAPSHOT_MODE_AUTO && opt.max_snapshot_bytes == 0 &&
      baseline_supported(slot)) {
    // The full snapshot did not fit after all: save what the launch is known to write (nothing
    // yet, or what it wrote before) instead.
    predict_save(slot, /*range=*/false, ws);
    return save_write_set(st, snapshot, t0);
  }
  if (!placement.ok()) {
    // Once: the same footprint declines every later launch too; the run's tally counts them.
    KR_WARN_ONCE("snapshot-too-large", "dispatch {} ({}) not replayed: {}; later launches that do "
                                       "not fit are not replayed either (counted as declined)",
                 st.info.dispatch_id, st.info.kernel_name,
                 snapshot_too_large_message(dev, regions, placement.status().message()));
    return KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE;
  }
  auto& out = st.outcome;
  out.regions = placement->copies.size();
  out.device_storage_bytes = placement->device_bytes;
  out.host_storage_bytes = placement->host_bytes;
  uint64_t bytes = placement->total_bytes;
  if (Status s = snapshot.take(dev, std::move(placement).value(), opt.chunk_bytes); !s.ok()) {
    KR_WARN("dispatch {} ({}) not replayed: snapshot failed: {}", st.info.dispatch_id,
            st.info.kernel_name, s.message());
    return KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
  }
  uint64_t t1 = now_ns();
  out.bytes_snapshotted = bytes;
  out.snapshot_ns = t1 - t0;
  out.snapshot_mode = KREPLAY_SNAPSHOT_MODE_FULL;
  st.intervals.push_back({KREPLAY_REPLAY_INTERVAL_SNAPSHOT, 0, t0, t1, bytes});
  if (heap) {
    if (!save_device_heap(dev, st.info.kernel_name, &out.bytes_snapshotted, &out.snapshot_ns,
                          &st.intervals))
      return KREPLAY_DECLINE_REASON_DEVICE_HEAP;
    st.heap_saved = true;
  }
  return KREPLAY_DECLINE_REASON_NONE;
}

kreplay_decline_reason_t Engine::save_write_set(DispatchState& st, Snapshot& snapshot,
                                                uint64_t t0) {
  DeviceSlot& slot = *st.slot;
  WriteSetWindow& ws = st.ws;
  if (Status s = take_baseline(slot, ws); !s.ok()) {
    KR_WARN("dispatch {} ({}) not replayed: the digests of its device's memory failed: {}",
            st.info.dispatch_id, st.info.kernel_name, s.message());
    ws.kind = SaveKind::kNone;
    return KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
  }
  Result<Placement> placement = save_extents(slot, ws, snapshot);
  if (!placement.ok()) {
    KR_WARN_ONCE("write-set-too-large", "dispatch {} ({}) not replayed: {}", st.info.dispatch_id,
                 st.info.kernel_name, placement.status().message());
    ws.kind = SaveKind::kNone;
    return placement.status().code() == KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES
               ? KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE
               : KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
  }
  auto& out = st.outcome;
  const uint64_t t1 = now_ns();
  out.regions = placement->copies.size();
  out.device_storage_bytes = placement->device_bytes;
  out.host_storage_bytes = placement->host_bytes;
  out.bytes_snapshotted = placement->total_bytes;
  out.snapshot_ns = t1 - t0;
  out.snapshot_mode = KREPLAY_SNAPSHOT_MODE_WRITE_SET;
  st.intervals.push_back(
      {KREPLAY_REPLAY_INTERVAL_SNAPSHOT, 0, t0, t1, placement->total_bytes});
  return KREPLAY_DECLINE_REASON_NONE;
}

void Engine::decline(DispatchState& st, kreplay_decline_reason_t reason) {
  drop_device_heap(st);
  if (st.exclusive.owns_lock()) {
    tls().drop_window(st.slot);
    st.exclusive.unlock();
  }
  st.ws.kind = SaveKind::kNone;
  st.window = false;
  st.outcome.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
  st.outcome.reason = reason;
  st.outcome.passes_executed = 1;
  st.outcome.bytes_snapshotted = 0;
  st.outcome.regions = 0;
  st.outcome.device_storage_bytes = 0;
  st.outcome.host_storage_bytes = 0;
  st.intervals.clear();
  stats_.declined.fetch_add(1, std::memory_order_relaxed);
  KR_DEBUG("dispatch {} declined: {}", st.info.dispatch_id, reason_text(reason));
  hooks_.config_exit(st);
  begin_single_run(st);
}

void Engine::begin_single_run(DispatchState& st) {
  if (st.slot && !st.reentrant && hooks_.replay_configured() && !st.shared.owns_lock())
    st.shared = std::shared_lock(st.slot->window_mu);
  memory_changed();  // it runs unmeasured
  // Behind a launch that may wait for the host: neither counted nor waited for (a run that is not
  // replayed is still counted and waited for when a tool counts it).
  if (st.slot && !st.behind_host_waiter && st.slot->host_waiter_running())
    st.behind_host_waiter = true;
  st.pass = 0;
  st.wait_needed = hooks_.before_submit(st);
  // A launch over mapped host memory is waited for briefly, so that exit() can hold it as a host
  // waiter should it outlive the wait (the launches queued behind it are then not waited for).
  if (st.host_visible) st.wait_needed = true;
}

void Engine::exit(DispatchState* st, bool submitted) {
  if (st->graph_nodes) {
    run_graph_nodes(*st, submitted);
    release(st);
    return;
  }
  if (st->in_range) {
    range_exit(*st, submitted);
    release(st);
    return;
  }
  if (!st->window) {
    if (st->wait_needed) {
      st->timing = {};
      if (submitted) {
        // A launch over mapped host memory may wait for the host: it is waited for only briefly
        // (its record then has no times) so the application's thread goes on.
        const Options opt = options();
        uint64_t limit = opt.drain_timeout_ms;
        if (st->behind_host_waiter) {
          limit = 0;  // it may be queued behind a launch that waits for the host
        } else if (st->host_visible) {
          limit = st->known_host_waiter ? 0 : std::min(opt.host_wait_ms, limit);
        }
        Status w = st->work->wait(limit, &st->timing);
        if (!w.ok() && !st->may_wait_for_host()) {
          KR_WARN("dispatch {}: {}", st->info.dispatch_id, w.message());
        }
        if (!w.ok() && st->host_visible) {
          // Queued behind another host waiter, it is held as well but its kernel is not marked:
          // it may only have been waiting its turn.
          hold_host_waiter(*st->slot, st->info, st->launch->record(), opt.host_wait_ms,
                           /*mark_kernel=*/!st->behind_host_waiter);
        }
        if (!w.ok()) st->timing = {};
      }
      hooks_.after_complete(*st);
    }
    stats_.passes.fetch_add(submitted ? 1 : 0, std::memory_order_relaxed);
    release(st);
    return;
  }

  run_passes(*st, submitted);
  finish_window(*st);
}

void Engine::run_passes(DispatchState& st, bool pass0_submitted) {
  const Options opt = options();
  device::Device& dev = *st.slot->device;
  auto& out = st.outcome;
  out.outcome = KREPLAY_REPLAY_OUTCOME_REPLAYED;
  if (!pass0_submitted) {
    // The application's own submission failed: nothing ran, nothing to replay.
    out.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
    out.reason = KREPLAY_DECLINE_REASON_LAUNCH_FAILED;
    st.timing = {};
    if (!st.probe) {
      hooks_.after_complete(st);
      hooks_.pass_exit(st);
    }
    return;
  }
  if (st.probe && !run_probe(st)) return;
  out.divergence_checked = opt.check_divergence ? 1 : 0;
  while (true) {
    Status w = st.work->wait(opt.drain_timeout_ms, &st.timing);
    if (!w.ok()) {
      if (w.code() == KREPLAY_STATUS_ERROR_DEVICE_FAULT) {
        // The kernel failed on the device (a device-side assert, a fault): the context runs
        // nothing more, so the loop ends here; the application sees the error as it would
        // without kreplay.
        KR_WARN("dispatch {} ({}) failed on the device in pass {}: {}; it is not replayed further",
                st.info.dispatch_id, st.info.kernel_name, st.pass, w.message());
        out.reason = KREPLAY_DECLINE_REASON_LAUNCH_FAILED;
      } else {
        KR_WARN("dispatch {} ({}) pass {}: {}; ending its replay", st.info.dispatch_id,
                st.info.kernel_name, st.pass, w.message());
        out.reason = KREPLAY_DECLINE_REASON_PASS_TIMEOUT;
      }
      st.timing = {};
      hooks_.after_complete(st);
      hooks_.pass_exit(st);
      return;
    }
    ++out.passes_executed;
    stats_.passes.fetch_add(1, std::memory_order_relaxed);
    bool missed = false;
    if (st.ws.kind == SaveKind::kWriteSet && !st.ws.learned && opt.check_write_sets) {
      // The application's own pass: did it write only what was saved?
      bool covered = false;
      uint64_t changed = 0;
      if (Status m = measure_writes(*st.slot, st.ws, false, &changed, &covered); !m.ok()) {
        KR_WARN("dispatch {} ({}): what it wrote could not be measured ({}); it is not replayed",
                st.info.dispatch_id, st.info.kernel_name, m.message());
      }
      out.bytes_changed = changed;
      missed = !covered;
    }
    if (opt.check_divergence) check_divergence(st);
    hooks_.after_complete(st);
    hooks_.pass_exit(st);
    if (missed) {
      if (st.ws.predicted) {
        KR_WARN_ONCE("write-set-miss",
                     "dispatch {} ({}) wrote outside the {} kreplay predicted and saved: it ran "
                     "once (the application's own run) and is counted as declined "
                     "(write_set_unknown); its kernel's later launches save what it wrote",
                     st.info.dispatch_id, st.info.kernel_name,
                     format_bytes(extent_bytes(st.ws.saved)));
      } else {
        KR_WARN_ONCE("write-set-unknown",
                     "dispatch {} ({}) not replayed: a snapshot of all {} of tracked memory does "
                     "not fit and what the kernel writes was not known yet; it ran once while "
                     "kreplay learned what it writes, and its later launches save only that "
                     "(launches like it are counted as declined: write_set_unknown)",
                     st.info.dispatch_id, st.info.kernel_name,
                     format_bytes(st.ws.layout.total_bytes()));
      }
      out.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
      out.reason = KREPLAY_DECLINE_REASON_WRITE_SET_UNKNOWN;
      keep_baseline(*st.slot, st.ws);
      return;
    }
    if (!should_continue(st.plan, st.pass, st.replay_continue, st.info, st.user_data)) {
      if (st.ws.kind == SaveKind::kWriteSet && opt.check_write_sets) {
        if (out.passes_executed > 1 &&
            !verify_last_pass(*st.slot, st.ws, st.info.dispatch_id, st.info.kernel_name))
          ++out.diverged_passes;
        keep_baseline(*st.slot, st.ws);
      }
      return;
    }
    uint64_t t0 = now_ns();
    Result<uint64_t> restored = st.snapshot.restore(dev, opt.verify_restore);
    uint64_t t1 = now_ns();
    if (!restored.ok()) {
      KR_ERROR("dispatch {} ({}): restore after pass {} failed: {}; its memory may hold more "
               "than one execution",
               st.info.dispatch_id, st.info.kernel_name, st.pass, restored.status().message());
      out.reason = KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
      return;
    }
    Result<uint64_t> zeroed = restore_zeroed(*st.slot, st.ws);
    if (zeroed.ok() && st.heap_saved) add_restored(zeroed, restore_device_heap(dev));
    if (!zeroed.ok()) {
      KR_ERROR("dispatch {} ({}): restore after pass {} failed: {}; its memory may hold more "
               "than one execution",
               st.info.dispatch_id, st.info.kernel_name, st.pass, zeroed.status().message());
      out.reason = KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
      return;
    }
    t1 = now_ns();
    out.bytes_restored += *restored + *zeroed;
    out.restore_ns += t1 - t0;
    st.intervals.push_back(
        {KREPLAY_REPLAY_INTERVAL_RESTORE, st.pass, t0, t1, *restored + *zeroed});
    learn_full(*st.slot, st.ws, /*range=*/false, st.snapshot, &out.bytes_changed);
    flush_before_pass(dev);
    ++st.pass;
    hooks_.pass_enter(st, *st.local);
    hooks_.before_submit(st);
    if (Status r = st.work->resubmit(); !r.ok()) {
      KR_ERROR("dispatch {} ({}): resubmission for pass {} failed: {}", st.info.dispatch_id,
               st.info.kernel_name, st.pass, r.message());
      out.reason = KREPLAY_DECLINE_REASON_LAUNCH_FAILED;
      st.timing = {};
      hooks_.after_complete(st);
      hooks_.pass_exit(st);
      return;
    }
  }
}

bool Engine::run_probe(DispatchState& st) {
  const Options opt = options();
  auto& out = st.outcome;
  device::PassTiming probe_timing{};
  if (Status w = st.work->wait(std::min(opt.host_wait_ms, opt.drain_timeout_ms), &probe_timing);
      !w.ok()) {
    out.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
    out.reason = KREPLAY_DECLINE_REASON_WAITS_FOR_HOST;
    out.passes_executed = 1;
    hold_host_waiter(*st.slot, st.info, st.launch->record(), opt.host_wait_ms);
    return false;
  }
  // The probe finished: back to the entry state; every pass is a resubmission.
  uint64_t t0 = now_ns();
  Result<uint64_t> restored = st.snapshot.restore(*st.slot->device, opt.verify_restore);
  if (restored.ok() && st.heap_saved)
    add_restored(restored, restore_device_heap(*st.slot->device));
  uint64_t t1 = now_ns();
  if (!restored.ok()) {
    KR_ERROR("dispatch {} ({}): restore after its first run failed: {}", st.info.dispatch_id,
             st.info.kernel_name, restored.status().message());
    out.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
    out.reason = KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
    out.passes_executed = 1;
    return false;
  }
  out.bytes_restored += *restored;
  out.restore_ns += t1 - t0;
  st.intervals.push_back({KREPLAY_REPLAY_INTERVAL_RESTORE, 0, t0, t1, *restored});
  flush_before_pass(*st.slot->device);
  st.pass = 0;
  hooks_.pass_enter(st, *st.local);
  hooks_.before_submit(st);
  if (Status r = st.work->resubmit(); !r.ok()) {
    KR_ERROR("dispatch {} ({}): resubmission for pass 0 failed: {}", st.info.dispatch_id,
             st.info.kernel_name, r.message());
    out.outcome = KREPLAY_REPLAY_OUTCOME_DECLINED;
    out.reason = KREPLAY_DECLINE_REASON_LAUNCH_FAILED;
    st.timing = {};
    hooks_.after_complete(st);
    hooks_.pass_exit(st);
    return false;
  }
  return true;
}

void Engine::check_divergence(DispatchState& st) {
  auto& out = st.outcome;
  if (!out.divergence_checked) return;
  Result<uint64_t> h = st.snapshot.live_digest(*st.slot->device);
  if (!h.ok()) {
    out.divergence_checked = 0;
    KR_WARN_ONCE("divergence",
                 "--check-divergence: the device's memory could not be digested "
                 "after a pass ({}); divergence is not checked",
                 h.status().message());
    return;
  }
  if (out.passes_executed == 1) {
    st.first_digest = *h;
  } else if (*h != st.first_digest) {
    ++out.diverged_passes;
    if (out.diverged_passes == 1) {
      KR_DEBUG("dispatch {} ({}): pass {} left different memory than its first pass",
               st.info.dispatch_id, st.info.kernel_name, st.pass);
    }
  }
}

bool Engine::holds_untracked_memory(device::Device& dev) {
  if (!options().decline_untracked) return false;
  const uint64_t untracked = dev.untracked_bytes();
  if (untracked == 0) return false;
  KR_WARN_ONCE("untracked", "the device holds {} of memory kreplay does not track; its "
                            "launches are not replayed",
               format_bytes(untracked));
  return true;
}

bool Engine::flush_before_pass(device::Device& dev) {
  if (!options().flush_caches) return false;
  Status s = dev.flush_caches();
  if (s.ok()) {
    stats_.cache_flushes.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // Once per process: the same device answers the same way on every pass.
  KR_WARN_ONCE("cache-flush",
               "--cache-control all: the caches could not be flushed before a "
               "pass ({}); passes start with whatever the caches hold",
               s.message());
  return false;
}

void Engine::finish_window(DispatchState& st) {
  st.local.reset();
  st.outcome.intervals = st.intervals.data();
  st.outcome.interval_count = st.intervals.size();
  if (st.outcome.outcome == KREPLAY_REPLAY_OUTCOME_REPLAYED)
    stats_.replayed.fetch_add(1, std::memory_order_relaxed);
  else
    stats_.declined.fetch_add(1, std::memory_order_relaxed);
  // CONFIG EXIT fires while the window is still held: the tool sees the outcome before any
  // other launch on the device proceeds.
  hooks_.config_exit(st);
  release(&st);
}

void Engine::release(DispatchState* st) {
  drop_device_heap(*st);
  hooks_.end_dispatch(*st);
  if (st->exclusive.owns_lock()) {
    tls().drop_window(st->slot);
    st->exclusive.unlock();
  }
  if (st->shared.owns_lock()) st->shared.unlock();
  st->local.reset();
  tls().release(st);
}

}  // namespace kreplay::replay
