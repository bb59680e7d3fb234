// Range replay (DESIGN.md §2b): consecutive launches on one stream recorded as one unit.
//
// Life of a range on a device (DeviceSlot::range, guarded by DeviceSlot::range_mu):
//   open    at a launch when none is open: CONFIG ENTER (pass count), drain + snapshot under the
//           window lock, a cache flush unless each launch gets its own (below), PASS 0 ENTER; the
//           window lock is then released — every launch and every memory call of the
//           application goes through range_enter / range_barrier, which close the range first
//           when they are not the range's own next launch.
//   record  each launch of the range: LAUNCH ENTER (the tool may unselect it); its services'
//           ENTER, with the counter session of pass 0 begun before the first counted launch; with
//           cache control (a replayed range, RangeState::flush_launches) a wait for the launch
//           before and a cache flush (flush_before_launch); the application submits it; at its
//           API exit the backend's recorded copy is kept.
//   memory  memsets, copies into device memory, allocations and frees on the range's streams
//           join it (range_memops.cpp): recorded between its launches and submitted again in
//           order on every later pass; allocations saved as they are made, frees deferred.
//   close   (range_close.cpp) before the call that ends it: under the window lock, wait for
//           pass 0, deliver its services, PASS 0 EXIT, then per further pass: restore, cache
//           flush (unless per launch), PASS ENTER, services' ENTER, counter session, resubmit
//           every recorded launch (with cache control, each after the one before completed and
//           a flush), wait, services' EXIT, PASS EXIT. The last pass is not restored. CONFIG
//           EXIT carries the outcome.
//
// Cache control (--cache-control all) thus starts every launch of every pass of a replayed range
// cold, as kernel replay does. Each launch's flush, the first's included, comes after the pass's
// counter session began: starting a session writes device memory (CUPTI's; on the H200 the
// range's first launch was charged 27 MiB of DRAM writes, ncu 2.25, while its flush came first).
// A flush inside a counter session tells the counter backend where it falls
// (CounterBackend::range_flush), since on CUDA the flush is a kernel, counted as a range of its
// own, that the backend leaves out of the launches' values (device/range_flushes.hpp).
//
// Everything kreplay does inside the range machinery (tool callbacks included) runs with a
// thread-local depth above 0; calls made from there neither join nor close a range.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "common/logging.hpp"
#include "common/util.hpp"
#include "replay/engine.hpp"
#include "replay/range_internal.hpp"

namespace kreplay::replay {
namespace {

thread_local int tl_app_call_depth = 0;

}  // namespace

using detail::RangeDepth;
using detail::tl_range_depth;

void Engine::set_range_options(const RangeOptions& options) {
  std::lock_guard lock(range_options_mu_);
  range_options_ = options;
  if (range_options_.max_launches == 0) range_options_.max_launches = 64;
}

RangeOptions Engine::range_options() const {
  std::lock_guard lock(range_options_mu_);
  return range_options_;
}

bool Engine::range_markers_allow() const {
  switch (range_options().marker) {
    case RangeOptions::Marker::kNone:
      return true;
    case RangeOptions::Marker::kCudaProfiler:
      return profiler_active_.load();
    case RangeOptions::Marker::kNvtx:
      return nvtx_depth_.load() > 0;
  }
  return true;
}

void Engine::range_marker(MarkerEvent event, std::string_view name) {
  const RangeOptions opt = range_options();
  switch (event) {
    case MarkerEvent::kProfilerStart:
      if (opt.marker == RangeOptions::Marker::kCudaProfiler) {
        range_barrier(0, KREPLAY_RANGE_CLOSE_MARKER);  // a range starts at the marker
        profiler_active_.store(true);
      }
      break;
    case MarkerEvent::kProfilerStop:
      if (opt.marker == RangeOptions::Marker::kCudaProfiler) {
        range_barrier(0, KREPLAY_RANGE_CLOSE_MARKER);
        profiler_active_.store(false);
      }
      break;
    case MarkerEvent::kNvtxPush:
      if (opt.marker == RangeOptions::Marker::kNvtx && name == opt.nvtx_name) {
        if (nvtx_depth_.fetch_add(1) == 0) range_barrier(0, KREPLAY_RANGE_CLOSE_MARKER);
      }
      break;
    case MarkerEvent::kNvtxPop:
      if (opt.marker == RangeOptions::Marker::kNvtx && name == opt.nvtx_name &&
          nvtx_depth_.load() > 0) {
        range_barrier(0, KREPLAY_RANGE_CLOSE_MARKER);
        nvtx_depth_.fetch_sub(1);
      }
      break;
  }
}

bool Engine::in_range_machinery() {
  return tl_range_depth > 0;
}

void Engine::app_call_enter() {
  ++tl_app_call_depth;
}
void Engine::app_call_exit() {
  if (tl_app_call_depth > 0) --tl_app_call_depth;
}

Status Engine::close_open_ranges(kreplay_range_close_reason_t why, uint64_t timeout_ms,
                                 uint64_t* open_launches) {
  if (open_launches != nullptr) *open_launches = 0;
  if (!hooks_.range_configured()) return Status::Ok();
  std::vector<DeviceSlot*> slots = open_range_slots(0);
  if (slots.empty()) return Status::Ok();
  auto count = [&] {
    uint64_t n = 0;
    for (DeviceSlot* s : slots) {
      std::unique_lock lock(s->range_mu, std::try_to_lock);
      if (lock.owns_lock() && s->range) n += s->range->launches.size();
    }
    return n;
  };
  if (tl_range_depth > 0 || in_window() || tl_app_call_depth > 0) {
    if (open_launches != nullptr) *open_launches = count();
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                 tl_app_call_depth > 0 ? "this thread is inside a device API call"
                                       : "this thread is inside kreplay's replay");
  }
  const uint64_t deadline = now_ns() + timeout_ms * 1000000ull;
  Status result = Status::Ok();
  for (DeviceSlot* s : slots) {
    std::unique_lock lock(s->range_mu, std::defer_lock);
    while (!lock.try_lock()) {
      if (now_ns() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!lock.owns_lock()) {
      result = Error(KREPLAY_STATUS_ERROR,
                     "a range stayed busy for " + std::to_string(timeout_ms) + " ms");
      continue;
    }
    if (!s->range) continue;
    if (open_launches != nullptr) *open_launches += s->range->launches.size();
    close_range(*s, why);
  }
  return result;
}

void Engine::range_barrier(uint64_t agent, kreplay_range_close_reason_t why, const char* call) {
  if (tl_range_depth > 0 || !hooks_.range_configured()) return;
  for (DeviceSlot* s : open_range_slots(agent)) {
    std::unique_lock lock(s->range_mu);
    if (s->range) close_range(*s, why, call);
  }
}

bool Engine::range_spans_sync(const DeviceSlot& slot, const RangeState& r) const {
  // Declined, probing and whole-graph ranges close at their launch's exit; one whose launches
  // reach managed memory (directly, or possibly through memory, while the device holds any) could
  // be read by the host without a call after the synchronization. Mapped host memory in a
  // launch's arguments already makes that launch a range of its own. And the range's snapshot
  // holds every mapped host allocation of the device, which the host may write after the
  // synchronization with no call kreplay sees: the range's restores would undo those writes
  // (cuda-samples inlinePTX filled a pinned buffer between its synchronize and its next
  // allocation, and failed its check), so while the device has any, a synchronization closes.
  return range_options().span_syncs && r.declined == KREPLAY_DECLINE_REASON_NONE && !r.probe &&
         !r.whole_graph && !r.host_observable &&
         !inventory_.holds(slot.agent, KREPLAY_MEMORY_KIND_MANAGED) &&
         !inventory_.holds(slot.agent, KREPLAY_MEMORY_KIND_HOST_MAPPED);
}

void Engine::range_sync(uint64_t agent, const char* call) {
  if (tl_range_depth > 0 || !hooks_.range_configured()) return;
  for (DeviceSlot* s : open_range_slots(agent)) {
    std::unique_lock lock(s->range_mu);
    if (!s->range) continue;
    if (range_spans_sync(*s, *s->range)) {
      ++s->range->outcome.synchronizations_spanned;
    } else {
      close_range(*s, KREPLAY_RANGE_CLOSE_SYNCHRONIZE, call);
    }
  }
}

void Engine::range_event_record(uint64_t agent, uint64_t stream, uint64_t event) {
  if (tl_range_depth > 0 || !hooks_.range_configured()) return;
  for (DeviceSlot* s : open_range_slots(agent)) {
    std::unique_lock lock(s->range_mu);
    if (!s->range) continue;
    auto& events = s->range->chain_events;
    std::erase(events, event);  // recorded again: it now marks this point of this stream
    if (s->range->stream == stream) events.push_back(event);
  }
}

void Engine::range_stream_wait(uint64_t agent, uint64_t stream, uint64_t event) {
  if (tl_range_depth > 0 || !hooks_.range_configured()) return;
  for (DeviceSlot* s : open_range_slots(agent)) {
    std::unique_lock lock(s->range_mu);
    if (!s->range) continue;
    RangeState& r = *s->range;
    // (Another thread's own stream is not the range thread's stream of that handle.)
    if (range_thread_blocker(*s, r, stream) != KREPLAY_RANGE_CLOSE_NONE) continue;
    if (r.stream != stream && std::ranges::find(r.chain_events, event) != r.chain_events.end() &&
        std::ranges::find(r.ordered_streams, stream) == r.ordered_streams.end())
      r.ordered_streams.push_back(stream);
  }
}

std::vector<DeviceSlot*> Engine::open_range_slots(uint64_t agent) {
  std::vector<DeviceSlot*> slots;
  std::shared_lock lock(slots_mu_);
  for (auto& [a, s] : slots_) {
    if ((agent == 0 || a == agent) && s->range_open.load(std::memory_order_acquire))
      slots.push_back(s.get());
  }
  return slots;
}

void Engine::range_enter(DispatchState& st) {
  DeviceSlot& slot = *st.slot;
  if (tl_range_depth > 0) {
    // Launched by kreplay's own machinery or a tool callback: runs once, outside any range.
    st.reentrant = true;
    begin_single_run(st);
    return;
  }
  RangeDepth depth;
  st.range_lock = std::unique_lock(slot.range_mu);
  const RangeOptions opt = range_options();
  if (slot.range) {
    kreplay_range_close_reason_t why =
        range_thread_blocker(slot, *slot.range, st.info.stream_id.handle);
    const uint64_t context = st.launch->context_key();
    if (why != KREPLAY_RANGE_CLOSE_NONE) {
      // (another thread's launch on its own stream)
    } else if (slot.range->context != 0 && context != 0 && context != slot.range->context) {
      // Another context (CUDA: cuCtxSetCurrent or another thread's context): the passes run
      // under the first launch's.
      why = KREPLAY_RANGE_CLOSE_OTHER;
    } else if (const RangeState& r = *slot.range;
               r.stream != st.info.stream_id.handle &&
               std::ranges::find(r.ordered_streams, st.info.stream_id.handle) ==
                   r.ordered_streams.end()) {
      // Another stream joins only behind an event recorded after the range's last launch: the
      // range's launches then run one after another, and its passes resubmit them in that order.
      why = KREPLAY_RANGE_CLOSE_OTHER_STREAM;
    } else if (slot.range->launches.size() >= opt.max_launches) {
      why = KREPLAY_RANGE_CLOSE_LAUNCH_LIMIT;
    } else if (st.launch->graph() != nullptr || (st.info.flags & KREPLAY_DISPATCH_FLAG_CAPTURED)) {
      // (A graph's kernel node, run node by node, carries the GRAPH flag but joins ranges.)
      why = KREPLAY_RANGE_CLOSE_GRAPH;
    } else if ((st.info.flags &
                (KREPLAY_DISPATCH_FLAG_COLLECTIVE | KREPLAY_DISPATCH_FLAG_DEVICE_HEAP)) ||
               st.host_visible || st.peer_agent != 0) {
      why = KREPLAY_RANGE_CLOSE_OTHER;
    } else if (!st.launch->recordable()) {
      why = KREPLAY_RANGE_CLOSE_OTHER;
    } else if (!range_saves_joiner(slot, *slot.range, st)) {
      why = KREPLAY_RANGE_CLOSE_WRITE_SET;
    }
    if (why != KREPLAY_RANGE_CLOSE_NONE) close_range(slot, why);
  }
  // A graph launch is a range of its own (the launch before it closed the open range above): one
  // workload, replayed by launching the graph again; one that cannot be run again is a declined
  // range, so the tool still learns of it and why.
  const device::GraphInfo* graph = st.launch->graph();
  // So is a launch that uses the device heap: its range saves the heap too (device_heap.cpp).
  const bool can_join =
      (st.info.flags & (KREPLAY_DISPATCH_FLAG_CAPTURED | KREPLAY_DISPATCH_FLAG_COLLECTIVE)) == 0 &&
      st.launch->recordable() && range_markers_allow();
  if (!slot.range && can_join) {
    // A launch that reads mapped host memory may wait for the host: it is a range of its own whose
    // own run is not counted and is waited for only briefly.
    kreplay_decline_reason_t declined =
        graph != nullptr ? graph->whole_decline() : KREPLAY_DECLINE_REASON_NONE;
    if (st.known_host_waiter)
      declined = KREPLAY_DECLINE_REASON_WAITS_FOR_HOST;  // it waited for the host before
    if (st.peer_agent != 0) {
      // Its own device's snapshot would not restore the peer memory: a declined range of its own.
      warn_peer_memory(st.info);
      declined = KREPLAY_DECLINE_REASON_PEER_MEMORY;
    }
    if (open_range(slot, st, declined) && st.host_visible) {
      slot.range->probe = true;
      slot.range->counter_session_tried = true;  // its own run is not counted
    }
  }
  // The range just closed before this launch because of what its own range wrote: the range it
  // opened now learns for that one too (learn_range_cut). Any other way, the cut is dropped.
  if (std::optional<RangeCut> cut = std::exchange(slot.range_cut, std::nullopt);
      cut && slot.range && slot.range->launches.empty() &&
      slot.range->ws.kind == SaveKind::kWriteSet) {
    slot.range->cut = std::move(cut);
  }
  if (slot.range && can_join) {
    add_to_range(slot, st);
    return;
  }
  // Outside any range: an ordinary single run (behind a launch that may wait for the host,
  // begin_single_run marks it: neither counted nor waited for).
  st.range_lock.unlock();
  begin_single_run(st);
}

kreplay_range_close_reason_t Engine::range_thread_blocker(const DeviceSlot& slot,
                                                          const RangeState& r,
                                                          uint64_t stream) const {
  // Work from several threads joins in the order it reaches the driver: each launch and memory
  // call holds the range from before the application's call until after it returned, so the
  // range's order on a shared stream is the stream's own order.
  if (r.owner_thread == thread_id()) return KREPLAY_RANGE_CLOSE_NONE;
  // A write-bounded range is predicted from ranges that opened with the same launch. One that
  // holds two threads' launches varies with how their calls interleave (PyTorch's backward follows
  // the forward on its autograd thread) and repeats less: on an H100, torch_bigpool's ranges
  // replayed 20.6% of the launches after each kernel's first with both threads in them against
  // 80.7% with one (bench/RESULTS.md, seventeenth session). So it keeps to its thread.
  const bool write_bounded = r.ws.kind == SaveKind::kWriteSet;
  return r.thread_bound || write_bounded || slot.device->thread_stream(stream) ||
                 slot.device->thread_stream(r.stream)
             ? KREPLAY_RANGE_CLOSE_OTHER_THREAD
             : KREPLAY_RANGE_CLOSE_NONE;
}

bool Engine::open_range(DeviceSlot& slot, DispatchState& first, kreplay_decline_reason_t declined) {
  auto r = std::make_unique<RangeState>();
  r->whole_graph = first.launch->graph() != nullptr;
  r->heap = !r->whole_graph && (first.info.flags & KREPLAY_DISPATCH_FLAG_DEVICE_HEAP) != 0;
  r->heap_kernel = first.info.kernel_name;
  r->declined = declined;
  r->info.size = sizeof(r->info);
  r->info.range_id = next_range_id_.fetch_add(1, std::memory_order_relaxed);
  r->info.agent_id = first.info.agent_id;
  r->info.stream_id = first.info.stream_id;
  r->owner_thread = thread_id();
  r->context = first.launch->context_key();
  r->correlation = first.correlation;
  r->stream = first.info.stream_id.handle;
  hooks_.range_config_enter(*r);
  // The pass-count table, for a range.
  if (r->pass_count != nullptr) {
    uint64_t n = r->pass_count(r->info, r->user_data);
    r->plan.requested = n;
    if (n == 0 && r->replay_continue != nullptr) {
      r->plan.replay = r->plan.indefinite = true;
    } else if (n == 0) {
      r->plan.invalid = true;
    } else if (n > 1) {
      r->plan.replay = true;
    }
  }
  auto& out = r->outcome;
  out.size = sizeof(out);
  out.range_id = r->info.range_id;
  out.agent_id = r->info.agent_id;
  out.passes_requested = r->plan.requested;
  auto finish_unopened = [&](kreplay_replay_outcome_t outcome, kreplay_decline_reason_t reason) {
    out.outcome = outcome;
    out.reason = reason;
    if (outcome == KREPLAY_REPLAY_OUTCOME_DECLINED) stats_.declined.fetch_add(1);
    if (r->config_fired) hooks_.range_config_exit(*r);
    return false;
  };
  if (r->plan.invalid) {
    KR_WARN_ONCE("invalid-range-plan",
                 "a tool returned pass count 0 for a range without "
                 "replay_continue; the range is not replayed");
    return finish_unopened(KREPLAY_REPLAY_OUTCOME_DECLINED, KREPLAY_DECLINE_REASON_INVALID_PLAN);
  }
  // A range of one pass is not replayed, but still runs as a range: its launches share one
  // counter session (one profiler start and stop for all of them), with no drain and no snapshot.
  if (!r->plan.replay && r->plan.requested != 1 && declined == KREPLAY_DECLINE_REASON_NONE) {
    return finish_unopened(KREPLAY_REPLAY_OUTCOME_NOT_REQUESTED, {});
  }
  if (declined == KREPLAY_DECLINE_REASON_NONE && slot.host_waiter_running()) {
    // Behind a launch that may wait for the host: a replayed range would drain, and a range of
    // one pass would wait for its launches at its close; its launch runs once, neither counted
    // nor waited for.
    return finish_unopened(KREPLAY_REPLAY_OUTCOME_DECLINED, KREPLAY_DECLINE_REASON_WAITS_FOR_HOST);
  }
  if (declined == KREPLAY_DECLINE_REASON_NONE && !slot.device->capture_active()) {
    // Before the range's snapshot and first pass, with the device held: the counters' one-time
    // start-up cost (Hooks::warm_start) is paid here rather than by the range's passes.
    std::unique_lock window(slot.window_mu);
    hooks_.warm_start(first, /*range=*/true);
  }
  if (declined != KREPLAY_DECLINE_REASON_NONE) {
    // Runs once as a range of its own, uncounted: its outcome says why it was not replayed.
    if (declined != KREPLAY_DECLINE_REASON_PEER_MEMORY) {  // said by warn_peer_memory()
      KR_WARN_ONCE(reason_text(declined),
                   "{} is not replayed ({}): it would do that once per pass; "
                   "it runs once, and graphs like it are counted as declined",
                   first.info.kernel_name ? first.info.kernel_name : "a launch",
                   reason_text(declined));
    }
    r->plan.replay = false;
    r->counter_session_tried = true;
  } else if (r->plan.replay) {
    // What the range's write sets know it by: its first launch (a graph: the graph and its
    // nodes' words).
    if (const device::GraphInfo* g = first.launch->graph()) {
      r->ws.kernel = g->graph_id | (1ull << 63);
      r->ws.args.assign(g->node_words.begin(), g->node_words.end());
    } else {
      r->ws.kernel = first.info.kernel_id;
      r->ws.args.assign(first.launch->info().arg_bytes.begin(),
                        first.launch->info().arg_bytes.end());
    }
    if (kreplay_decline_reason_t why = save_range_entry(slot, *r, !first.host_visible);
        why != KREPLAY_DECLINE_REASON_NONE) {
      // Not replayed: a declined range of its own, like a graph that cannot run again, so the
      // tool learns of its launch and why (run outside any range, it was counted as not
      // selected). Where only the snapshot failed its one run is counted, as a declined launch's
      // is in kernel replay; a stuck device or a capture is not waited for.
      r->declined = why;
      r->plan.replay = false;
      r->counter_session_tried = why != KREPLAY_DECLINE_REASON_UNTRACKED_MEMORY &&
                                 why != KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE &&
                                 why != KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
    }
  }
  r->pre_active = hooks_.active_contexts();
  // A replayed range's launches each start cold too (flush_before_launch); a graph is one
  // workload, a range that is not replayed is not cache-controlled (as in kernel replay), nor is
  // a host-visible launch's probe range (the caller makes it one: a range of one launch).
  r->flush_launches =
      r->plan.replay && !r->whole_graph && !first.host_visible && options().flush_caches;
  // With flushes per launch the first launch's flush comes in add_to_range, once its counter
  // session began (see the top of this file).
  if (!r->flush_launches) flush_before_pass(*slot.device);
  r->pass = 0;
  {
    LocalContextScope scope(r->pre_active, {});
    hooks_.range_pass_enter(*r, scope);
    r->overrides = scope.overrides();
  }
  slot.range = std::move(r);
  slot.range_open.store(true, std::memory_order_release);
  (void)first;
  return true;
}

// A replayed range's entry state: drain the device, then snapshot every tracked region, with the
// window held. NONE when saved (the range's outcome carries its size and time), else why not.
kreplay_decline_reason_t Engine::save_range_entry(DeviceSlot& slot, RangeState& r,
                                                  bool write_bounded) {
  const Options opt = options();
  device::Device& dev = *slot.device;
  std::unique_lock window(slot.window_mu);
  uint64_t t0 = now_ns();
  if (dev.capture_active()) {
    KR_WARN_ONCE("capture-active",
                 "launches made while another stream of the device is being "
                 "captured into a graph are not replayed; they run once");
    return KREPLAY_DECLINE_REASON_STREAM_CAPTURE;
  }
  if (Status s = dev.drain(opt.drain_timeout_ms); !s.ok()) {
    KR_WARN("range {}: {}; its launches run once", r.info.range_id, s.message());
    return KREPLAY_DECLINE_REASON_DRAIN_TIMEOUT;
  }
  if (holds_untracked_memory(dev)) return KREPLAY_DECLINE_REASON_UNTRACKED_MEMORY;
  // A range's launches are not known in advance: it saves the whole inventory, or what ranges
  // that opened with the same launch wrote (write_bounded.cpp).
  std::vector<Region> regions = inventory_.regions(slot.agent);
  // A whole graph's write sets are the graph's own, shared with kernel replay's.
  const bool range_key = !r.whole_graph;
  if (r.heap) write_bounded = false;  // a full snapshot, then the heap (save_range_full)
  choose_save(slot, regions, range_key, write_bounded, r.ws);
  if (r.ws.kind == SaveKind::kFull) {
    slot.baseline_valid = false;  // the range's passes change memory unmeasured
    Result<Placement> placement = [&] {
      std::lock_guard lock(slot.pool_mu);
      return slot.pool.place(dev, regions, opt.chunk_bytes, opt.max_snapshot_bytes);
    }();
    if (placement.ok())
      return save_range_full(slot, r, regions, std::move(placement).value(), t0, window);
    if (!(write_bounded && opt.snapshot_mode == KREPLAY_SNAPSHOT_MODE_AUTO &&
          opt.max_snapshot_bytes == 0 && baseline_supported(slot))) {
      KR_WARN_ONCE("range-snapshot-too-large",
                   "range {} not replayed: {}; later ranges that do not fit are not replayed "
                   "either (counted as declined)",
                   r.info.range_id,
                   snapshot_too_large_message(dev, regions, placement.status().message()));
      return KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE;
    }
    // The full snapshot did not fit after all: save what the range is known to write instead.
    predict_save(slot, range_key, r.ws);
  }
  if (Status s = take_baseline(slot, r.ws); !s.ok()) {
    KR_WARN("range {} not replayed: the digests of its device's memory failed: {}", r.info.range_id,
            s.message());
    r.ws.kind = SaveKind::kNone;
    return KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
  }
  Result<Placement> placed = save_extents(slot, r.ws, r.snapshot);
  if (!placed.ok()) {
    KR_WARN_ONCE("range-write-set-too-large", "range {} not replayed: {}", r.info.range_id,
                 placed.status().message());
    r.ws.kind = SaveKind::kNone;
    return placed.status().code() == KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES
               ? KREPLAY_DECLINE_REASON_SNAPSHOT_TOO_LARGE
               : KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
  }
  const uint64_t bytes = placed->total_bytes;
  r.outcome.snapshot_mode = KREPLAY_SNAPSHOT_MODE_WRITE_SET;
  for (const Region& g : regions) {
    if (g.kind == KREPLAY_MEMORY_KIND_HOST_MAPPED) r.host_mapped.emplace_back(g.base, g.size);
  }
  uint64_t t1 = now_ns();
  slot.range_open.store(true, std::memory_order_release);
  window.unlock();
  r.outcome.bytes_snapshotted = bytes;
  r.outcome.snapshot_ns = t1 - t0;
  r.intervals.push_back({KREPLAY_REPLAY_INTERVAL_SNAPSHOT, 0, t0, t1, bytes});
  return KREPLAY_DECLINE_REASON_NONE;
}

kreplay_decline_reason_t Engine::save_range_full(DeviceSlot& slot, RangeState& r,
                                                 const std::vector<Region>& regions,
                                                 Placement placement, uint64_t t0,
                                                 std::unique_lock<std::shared_mutex>& window) {
  const Options opt = options();
  device::Device& dev = *slot.device;
  uint64_t bytes = placement.total_bytes;
  for (const Region& g : regions) {
    if (g.kind == KREPLAY_MEMORY_KIND_HOST_MAPPED) r.host_mapped.emplace_back(g.base, g.size);
  }
  if (Status s = r.snapshot.take(dev, std::move(placement), opt.chunk_bytes); !s.ok()) {
    KR_WARN("range {} not replayed: snapshot failed: {}", r.info.range_id, s.message());
    return KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
  }
  r.outcome.snapshot_mode = KREPLAY_SNAPSHOT_MODE_FULL;
  if (r.heap) {
    // (Its time is in the range's snapshot_ns below.)
    if (!save_device_heap(dev, r.heap_kernel, &r.outcome.bytes_snapshotted, nullptr, &r.intervals))
      return KREPLAY_DECLINE_REASON_DEVICE_HEAP;
    r.heap_saved = true;
  }
  uint64_t t1 = now_ns();
  // Published before the window opens again: a copy that takes the window from now on must see
  // the range and close it first (its barrier waits on range_mu, held until this launch's exit),
  // or the range's restore would undo what it writes. open_range sets slot.range itself.
  slot.range_open.store(true, std::memory_order_release);
  window.unlock();
  r.outcome.bytes_snapshotted += bytes;  // after the heap, where there is one
  r.outcome.snapshot_ns = t1 - t0;
  r.intervals.push_back({KREPLAY_REPLAY_INTERVAL_SNAPSHOT, 0, t0, t1, bytes});
  return KREPLAY_DECLINE_REASON_NONE;
}

bool Engine::range_saves_joiner(const DeviceSlot& slot, const RangeState& r,
                                const DispatchState& st) const {
  // A write-bounded range saved what ranges that opened with its first launch wrote. A launch
  // joining it that opened a range of its own before (a training step's ranges were cut by an
  // allocation the first time, or by another thread) may write beyond that: joined, the range
  // would be a first occurrence of its shape, run once to learn (WRITE_SET_UNKNOWN). Closed here
  // instead, the launch opens a range predicted from what it wrote then, and the range before
  // keeps the shape its own prediction knows; ranges that repeat join as before.
  if (r.ws.kind != SaveKind::kWriteSet || st.launch->graph() != nullptr) return true;
  // Only a range that opened with these very arguments: one opened by the same kernel on other
  // buffers (the same shape) wrote what the launches after it wrote, which translated to this
  // launch's pointers lands elsewhere (an elementwise kernel twice in one range would close it).
  std::optional<std::vector<Extent>> joiner =
      slot.range_writes.predict(st.info.kernel_id, st.launch->info().arg_bytes, r.ws.layout,
                                /*exact_only=*/true);
  return !joiner || covers(r.ws.saved, *joiner);
}

void Engine::add_to_range(DeviceSlot& slot, DispatchState& st) {
  RangeState& r = *slot.range;
  auto rl = std::make_unique<RangeLaunch>();
  rl->st = std::make_unique<DispatchState>();
  DispatchState& ls = *rl->st;
  ls.info = st.info;
  ls.graph_id = st.graph_id;
  ls.graph_node = st.graph_node;
  ls.correlation = st.correlation;
  ls.thread_id = st.thread_id;
  ls.slot = st.slot;
  ls.launch = st.launch;  // the application's launch until its API exit; then the recorded copy
  ls.in_range = true;
  ls.pass = r.pass;
  if (r.launches.empty()) r.info.first_dispatch_id = st.info.dispatch_id;
  // Events recorded so far precede this launch: they order nothing after it.
  if (r.launches.empty() || r.stream != st.info.stream_id.handle) ++r.outcome.streams;
  r.stream = st.info.stream_id.handle;
  r.chain_events.clear();
  r.ordered_streams.clear();
  if (inventory_.args_point_into(slot.agent, st.launch->info().arg_bytes,
                                 KREPLAY_MEMORY_KIND_MANAGED))
    r.host_observable = true;
  memory_changed();  // measured, if at all, when the range closes
  rl->selected = hooks_.range_launch(r, ls);
  r.info.launch_count = r.launches.size() + 1;
  // Services of this launch on pass 0, with the loop's local overrides.
  {
    LocalContextScope scope(r.pre_active, r.overrides);
    hooks_.before_submit(ls);
  }
  device::CounterBackend* counters = slot.device->counters();
  if (device::CounterSet* set = hooks_.armed_set(ls); set != nullptr && counters != nullptr) {
    if (!r.counter_session_tried) {
      // The session starts at the range's first counted launch: launches before it are not
      // selected and run uncounted.
      r.counter_session_tried = true;
      // With flushes per launch, the session's start (which writes device memory) waits for the
      // uncounted launches before: the flush after it then leaves this launch cold.
      if (r.flush_launches) (void)wait_for_launch_before(r, r.launches.size());
      if (Status s = counters->begin_range_pass(set, true, r.whole_graph, r.flush_launches);
          s.ok()) {
        r.counter_set = set;
        r.counted_from = r.launches.size();
      } else {
        KR_WARN("range {}: counters not collected: {}", r.info.range_id, s.message());
        r.counter_failure = s;
        r.counted_from = r.launches.size();
      }
    } else if (r.counter_set != nullptr && set != r.counter_set) {
      KR_WARN_ONCE("range-counter-set",
                   "the launches of a range must count one counter "
                   "config per pass; later configs are ignored");
    }
  }
  // --cache-control all: the launch starts cold, after the range's launches before it completed
  // and after its counter session began (where it begins at this launch), just before the
  // application's submission.
  flush_before_launch(slot, r, r.launches.size());
  rl->counted = r.counter_set != nullptr;
  st.in_range = true;
  st.range_launch = rl.get();
  r.launches.push_back(std::move(rl));
}

void Engine::range_exit(DispatchState& st, bool submitted) {
  RangeDepth depth;
  DeviceSlot& slot = *st.slot;
  RangeState& r = *slot.range;
  RangeLaunch* rl = st.range_launch;
  if (submitted) {
    rl->recorded = st.launch->record();
    rl->st->launch = rl->recorded.get();
    rl->st->work = nullptr;
  }
  if (!submitted || rl->recorded == nullptr) {
    // Nothing ran (or nothing can be resubmitted): the launch leaves the range.
    rl->st->timing = {};
    rl->st->launch = st.launch;
    hooks_.after_complete(*rl->st);
    hooks_.end_dispatch(*rl->st);
    r.launches.pop_back();
    r.info.launch_count = r.launches.size();
    if (submitted) close_range(slot, KREPLAY_RANGE_CLOSE_OTHER);
  }
  st.range_launch = nullptr;
  st.in_range = false;
  // A graph launch is a range of its own, and so are a declined launch and one that uses the
  // device heap: it closes at its exit.
  if (slot.range && (slot.range->whole_graph || slot.range->probe || slot.range->heap ||
                     slot.range->declined != KREPLAY_DECLINE_REASON_NONE)) {
    close_range(slot,
                slot.range->whole_graph ? KREPLAY_RANGE_CLOSE_GRAPH : KREPLAY_RANGE_CLOSE_OTHER);
  }
  st.range_lock.unlock();
}

}  // namespace kreplay::replay
