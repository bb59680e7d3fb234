// Range replay through the application's memory calls (docs/design.md, "Range replay: memory
// calls inside a range"). A range no longer closes at every memset, copy, allocation or free:
//
//   memset, copy between device memory, copy from host memory
//           joins the open range when it is ordered on the range's stream (or a stream ordered
//           after its last launch, as a launch would be; from a thread other than the one that
//           opened the range, a stream all threads share), and what it
//           writes (and, for a device copy, reads) lies in tracked device memory of the range's
//           device. The application's call is pass 0; the backend's recorded copy (a
//           device::MemoryOp) is submitted again on every later pass, in order with the launches.
//           A host-to-device copy's source bytes are captured by the backend when the call is
//           made (the host may reuse its buffer at once); a copy that would take a range's
//           captures past RangeOptions::capture_bytes closes the range instead.
//   allocation
//           stays inside the range: after the call, the new memory's content is saved into
//           storage of its own and put back before every later pass (its state from its
//           allocation on), so each pass sees it as the application's pass did.
//   free    is deferred until the range's last pass ended: the backend keeps the memory (it
//           stays valid for the passes and is not handed out again, so an allocation made later
//           in the range, on any stream, cannot alias memory the range still replays); the
//           engine frees it after the passes.
//
// What the memory calls write is the range's memory like what its launches write: a full
// snapshot holds every tracked region as the range opened, and a write-bounded range measures
// them with its digests (a memset outside the predicted save set is a miss, learned, as a
// launch's write is). Everything else that used to close a range still does (a copy to the host,
// a peer copy, memory the host can see without a call, another stream's call, another thread's
// call on its own per-thread stream).
#include <algorithm>
#include <utility>

#include "common/env.hpp"
#include "common/exit_safe.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"
#include "replay/engine.hpp"

namespace kreplay::replay {
namespace {

// The range a memory call joined, held from range_memory_begin to range_memory_done (one memory
// call at a time per thread: the backends' calls do not nest).
struct JoinedCall {
  std::unique_lock<std::mutex> lock;
  DeviceSlot* slot = nullptr;
  uint64_t stream = 0;
  const char* call = nullptr;
  bool repeats = true;  ///< not a copy to the host (RangeMemop::repeats)
};
// Exit-safe: a static object's destructor may free device memory inside an open range after the
// main thread's thread_locals are gone (common/exit_safe.hpp).
JoinedCall& joined_call() { return exit_safe_thread_local<JoinedCall>(); }

// Memory a memory call inside a range may touch: device memory only. The host reads and writes
// mapped host and managed memory with no call kreplay sees.
bool device_memory(kreplay_memory_kind_t kind) {
  return kind == KREPLAY_MEMORY_KIND_DEVICE || kind == KREPLAY_MEMORY_KIND_POOL ||
         kind == KREPLAY_MEMORY_KIND_VIRTUAL || kind == KREPLAY_MEMORY_KIND_MODULE_GLOBAL;
}

// [address, address + bytes) lies inside one tracked device region of @p agent.
bool in_device_region(const MemoryInventory& inv, uint64_t agent, uint64_t address,
                      uint64_t bytes) {
  Region first, last;
  if (!inv.find(agent, address, &first) || !device_memory(first.kind)) return false;
  if (bytes <= 1) return true;
  return inv.find(agent, address + bytes - 1, &last) && last.id == first.id;
}

}  // namespace

uint64_t default_range_capture_bytes() {
  static const uint64_t bytes = [] {
    uint64_t b = 64ull << 20;
    if (auto v = env::get("KREPLAY_RANGE_CAPTURE_BYTES");
        v && !v->empty() && !env::parse_bytes(*v, &b)) {
      KR_WARN("KREPLAY_RANGE_CAPTURE_BYTES='{}' is not a size (e.g. 64M); 64M is used", *v);
      b = 64ull << 20;
    }
    return b;
  }();
  return bytes;
}

namespace {

// KREPLAY_RANGE_MEMORY, KREPLAY_RANGE_HOST_READS: `join` or `close`; @p fallback when unset, or
// when not a choice (said once: @p joins is what join keeps inside a range).
bool join_or_close(const char* name, bool fallback, const char* joins) {
  auto v = env::get(name);
  if (!v || v->empty()) return fallback;
  if (*v == "join") return true;
  if (*v == "close") return false;
  KR_WARN("{}='{}' is not a choice; use join ({} stay inside a range) or close (each closes it); "
          "{} is used",
          name, *v, joins, fallback ? "join" : "close");
  return fallback;
}

// Storage for @p bytes a range saves at a point of its own (an allocation inside it, what its first
// pass changed): device memory where it fits, else pinned host memory.
Result<device::Storage> range_storage(device::Device& dev, uint64_t bytes) {
  const device::StorageTier tier = dev.storage_available(device::StorageTier::kDevice) >= bytes
                                       ? device::StorageTier::kDevice
                                       : device::StorageTier::kPinnedHost;
  if (dev.storage_available(tier) < bytes)
    return Error(KREPLAY_STATUS_ERROR_OUT_OF_RESOURCES, "no snapshot storage for it");
  return dev.allocate_storage(tier, bytes);
}

}  // namespace

bool default_range_join_memory() {
  static const bool join = join_or_close(
      "KREPLAY_RANGE_MEMORY", true, "memsets, copies into device memory, allocations and frees");
  return join;
}

bool default_range_join_host_reads() {
  static const bool join = join_or_close("KREPLAY_RANGE_HOST_READS", false, "copies to the host");
  return join;
}

Status PassCursor::wait(uint64_t timeout_ms) const {
  if (op != nullptr) return op->wait(timeout_ms);
  if (launch != nullptr) return launch->wait(timeout_ms, nullptr);
  return Status::Ok();
}

bool Engine::range_takes_memory_calls(const RangeState& r) const {
  // Another thread's memory call closes the range as it always did (reason MEMORY). Declined,
  // probing and whole-graph ranges close at their launch's exit: none is open here, but should
  // one be, it takes nothing more.
  // A write-bounded range is predicted from ranges that opened with the same launch: one that ran
  // through the memory calls between a decode loop's steps ended only at the launch limit, at a
  // different place in the loop each time, and never repeated (on an H100 kv_decode's ranges then
  // replayed none of its launches, against 97.1% when memory calls closed them: bench/RESULTS.md,
  // seventeenth session). Its memory calls close it, as its other threads' calls do.
  return range_options().join_memory && r.declined == KREPLAY_DECLINE_REASON_NONE && !r.probe &&
         !r.whole_graph && r.ws.kind != SaveKind::kWriteSet;
}

kreplay_range_close_reason_t Engine::memop_blocker(const DeviceSlot& slot, const RangeState& r,
                                                   const MemoryCall& op) const {
  if (!range_takes_memory_calls(r)) return KREPLAY_RANGE_CLOSE_MEMORY;
  const bool host_read = op.kind == MemoryCall::Kind::kCopyDeviceToHost;
  if (host_read && !range_options().join_host_reads) return KREPLAY_RANGE_CLOSE_MEMORY;
  if (auto why = range_thread_blocker(slot, r, op.stream); why != KREPLAY_RANGE_CLOSE_NONE)
    return why;
  // Ordered as a launch must be: on the stream of the range's last item, or on a stream that
  // waited for an event recorded after it.
  if (op.stream != r.stream &&
      std::ranges::find(r.ordered_streams, op.stream) == r.ordered_streams.end())
    return KREPLAY_RANGE_CLOSE_OTHER_STREAM;
  if (host_read) {
    // The host reads what the application's pass wrote. Host memory kreplay tracks (mapped,
    // managed) the range's kernels may read and write too, and a range with the device heap
    // saves more than memory: those close it, as does a source the range does not save.
    Region g;
    if (r.heap || inventory_.find(slot.agent, op.dst, &g) ||
        (op.bytes > 0 && !in_device_region(inventory_, slot.agent, op.src, op.bytes)))
      return KREPLAY_RANGE_CLOSE_MEMORY;
    return KREPLAY_RANGE_CLOSE_NONE;
  }
  if (op.bytes == 0) return KREPLAY_RANGE_CLOSE_NONE;
  // What it writes must be memory the range saves and restores: tracked device memory of this
  // device (a peer's, the host's or untracked memory would keep what each pass wrote).
  if (!in_device_region(inventory_, slot.agent, op.dst, op.bytes))
    return KREPLAY_RANGE_CLOSE_MEMORY;
  switch (op.kind) {
    case MemoryCall::Kind::kMemset:
      break;
    case MemoryCall::Kind::kCopyDeviceToDevice:
      // Its source must be restored too, or a later pass would copy what the passes before left.
      if (!in_device_region(inventory_, slot.agent, op.src, op.bytes))
        return KREPLAY_RANGE_CLOSE_MEMORY;
      break;
    case MemoryCall::Kind::kCopyDeviceToHost:
      break;  // above
    case MemoryCall::Kind::kCopyHostToDevice: {
      // Host memory the device can write (mapped, managed) may change under the range's own
      // launches before the copy reads it: the capture would not be what the copy read.
      Region g;
      if (inventory_.find(slot.agent, op.src, &g)) return KREPLAY_RANGE_CLOSE_MEMORY;
      if (r.plan.replay && r.captured_bytes + op.bytes > range_options().capture_bytes)
        return KREPLAY_RANGE_CLOSE_MEMORY;
      break;
    }
  }
  return KREPLAY_RANGE_CLOSE_NONE;
}

Engine::MemoryJoin Engine::range_memory_begin(uint64_t agent, const MemoryCall& op) {
  if (in_range_machinery() || !hooks_.range_configured()) return MemoryJoin::kNone;
  DeviceSlot* s = slot(agent);
  if (s == nullptr || !s->range_open.load(std::memory_order_acquire)) return MemoryJoin::kNone;
  std::unique_lock lock(s->range_mu);
  if (!s->range) return MemoryJoin::kNone;
  RangeState& r = *s->range;
  if (kreplay_range_close_reason_t why = memop_blocker(*s, r, op);
      why != KREPLAY_RANGE_CLOSE_NONE) {
    close_range(*s, why, op.call);
    return MemoryJoin::kNone;
  }
  if (op.kind == MemoryCall::Kind::kCopyHostToDevice && r.plan.replay) r.captured_bytes += op.bytes;
  const bool host_read = op.kind == MemoryCall::Kind::kCopyDeviceToHost;
  r.host_read |= host_read;
  // It is the range's latest item: events recorded before it order nothing after it.
  if (op.stream != r.stream) ++r.outcome.streams;
  r.stream = op.stream;
  r.chain_events.clear();
  r.ordered_streams.clear();
  memory_changed();
  JoinedCall& tl_joined = joined_call();
  tl_joined.lock = std::move(lock);
  tl_joined.slot = s;
  tl_joined.stream = op.stream;
  tl_joined.call = op.call;
  tl_joined.repeats = !host_read;
  return r.plan.replay ? MemoryJoin::kRecord : MemoryJoin::kJoined;
}

void Engine::range_memory_done(uint64_t agent, bool ok,
                               std::unique_ptr<device::MemoryOp> recorded) {
  (void)agent;
  JoinedCall joined = std::exchange(joined_call(), JoinedCall{});
  if (joined.slot == nullptr || !joined.lock.owns_lock() || !joined.slot->range) return;
  DeviceSlot& s = *joined.slot;
  RangeState& r = *s.range;
  if (!ok || !r.plan.replay) return;  // nothing ran, or nothing runs again
  if (recorded == nullptr) {
    // The application's pass holds the call, but the later passes could not repeat it: the range
    // runs no further pass (its launches ran once, which is what the application sees).
    KR_WARN_ONCE("range-memop-unrecorded",
                 "range {}: {} could not be recorded for the range's later passes; the range is "
                 "not replayed (counted as declined: snapshot_failed)",
                 r.info.range_id, joined.call ? joined.call : "a memory call");
    r.declined = KREPLAY_DECLINE_REASON_SNAPSHOT_FAILED;
    close_range(s, KREPLAY_RANGE_CLOSE_MEMORY, joined.call);
    return;
  }
  ++r.memory_calls;
  r.memops.push_back(
      {r.launches.size(), joined.stream, std::move(recorded), joined.call, joined.repeats});
}

void Engine::range_allocation_begin(uint64_t agent, const char* call) {
  if (in_range_machinery() || !hooks_.range_configured()) return;
  for (DeviceSlot* s : open_range_slots(agent)) {
    std::unique_lock lock(s->range_mu);
    if (!s->range) continue;
    if (!range_takes_memory_calls(*s->range)) close_range(*s, KREPLAY_RANGE_CLOSE_MEMORY, call);
  }
}

void Engine::range_allocated(uint64_t agent, uint64_t base, uint64_t size, const char* call,
                             const std::function<Status(const device::Storage&)>& save) {
  if (in_range_machinery() || !hooks_.range_configured() || size == 0) return;
  DeviceSlot* s = slot(agent);
  if (s == nullptr || !s->range_open.load(std::memory_order_acquire)) return;
  std::unique_lock lock(s->range_mu);
  if (!s->range) return;
  RangeState& r = *s->range;
  // Whichever thread allocated it and whenever the range opened (another thread's range may
  // have opened after range_allocation_begin), launches that join from now on may write it: it is
  // the range's state from here.
  if (!r.plan.replay) return;
  memory_changed();
  // Memory the range already puts back (an allocation of it, a deferred free) is never handed
  // out again while the range is open; should it be, the range closes rather than save it twice.
  const bool overlaps = std::ranges::any_of(r.allocations, [&](const RangeAllocation& a) {
    return base < a.base + a.size && a.base < base + size;
  });
  const Options opt = options();
  device::Device& dev = *s->device;
  RangeAllocation a;
  a.base = base;
  a.size = size;
  Status saved =
      overlaps ? Error(KREPLAY_STATUS_ERROR, "it overlaps memory the range saved") : Status::Ok();
  uint64_t t0 = now_ns();
  if (saved.ok()) {
    std::unique_lock window(s->window_mu);
    Result<device::Storage> storage = range_storage(dev, size);
    if (!storage.ok()) {
      saved = storage.status();
    } else {
      a.storage = *storage;
      a.copies.push_back({base, a.storage.address, size, 0});
      const uint64_t chunks = device::chunk_count(size, opt.chunk_bytes);
      if (save) {
        saved = save(a.storage);
      } else {
        std::vector<uint64_t> digests(chunks);
        saved = dev.snapshot(a.copies, opt.chunk_bytes, digests);
      }
      if (!saved.ok()) dev.free_storage(a.storage);
      for (uint64_t c = 0; c < chunks; ++c) a.chunks.push_back(c);
    }
  }
  if (!saved.ok()) {
    // None of the range's launches can have touched this memory yet: close before they do.
    KR_INFO("range {}: memory allocated inside it ({}) cannot be saved ({}); the range closes",
            r.info.range_id, format_bytes(size), saved.message());
    close_range(*s, KREPLAY_RANGE_CLOSE_MEMORY, call);
    return;
  }
  const uint64_t t1 = now_ns();
  r.outcome.bytes_snapshotted += size;
  r.outcome.snapshot_ns += t1 - t0;
  r.intervals.push_back({KREPLAY_REPLAY_INTERVAL_SNAPSHOT, 0, t0, t1, size});
  ++r.memory_calls;
  r.allocations.push_back(std::move(a));
}

bool Engine::range_defer_free(uint64_t agent, uint64_t base, std::function<void()> free,
                              const char* call) {
  if (in_range_machinery() || !hooks_.range_configured()) return false;
  DeviceSlot* s = slot(agent);
  if (s == nullptr || !s->range_open.load(std::memory_order_acquire)) return false;
  std::unique_lock lock(s->range_mu);
  if (!s->range) return false;
  RangeState& r = *s->range;
  if (!range_takes_memory_calls(r)) {
    close_range(*s, KREPLAY_RANGE_CLOSE_MEMORY, call);
    return false;
  }
  if (!r.plan.replay) return false;  // nothing runs again: the memory may go now
  memory_changed();
  ++r.memory_calls;
  r.deferred_frees.push_back(std::move(free));
  r.deferred_bases.push_back(base);
  return true;
}

bool Engine::resubmit_memops(RangeState& r, size_t index, PassCursor& cursor) {
  const uint64_t timeout = options().drain_timeout_ms;
  for (RangeMemop& m : r.memops) {
    // A copy to the host ran once, on the application's pass: the host holds what it read.
    if (m.before_launch != index || !m.repeats) continue;
    // On another stream than the item before: the application's events ordered them on pass 0;
    // later passes wait for the item before instead.
    if (cursor.any && cursor.stream != m.stream) {
      if (Status w = cursor.wait(timeout); !w.ok())
        KR_WARN("range {} pass {}: {}", r.info.range_id, r.pass, w.message());
    }
    if (Status s = m.op->resubmit(); !s.ok()) {
      KR_ERROR("range {} pass {}: {} could not be submitted again: {}", r.info.range_id, r.pass,
               m.call ? m.call : "a memory call", s.message());
      return false;
    }
    cursor = {nullptr, m.op.get(), m.stream, true};
  }
  return true;
}

bool Engine::wait_memops(RangeState& r, size_t index) {
  const uint64_t timeout = options().drain_timeout_ms;
  bool ok = true;
  for (RangeMemop& m : r.memops) {
    if (index != SIZE_MAX && m.before_launch != index) continue;
    if (Status w = m.op->wait(timeout); !w.ok()) {
      KR_WARN("range {} pass {}: {}: {}", r.info.range_id, r.pass,
              m.call ? m.call : "a memory call", w.message());
      ok = false;
    }
  }
  return ok;
}

Result<uint64_t> Engine::restore_allocations(device::Device& dev, RangeState& r) {
  const uint64_t chunk_bytes = options().chunk_bytes;
  uint64_t bytes = 0;
  for (const RangeAllocation& a : r.allocations) {
    RETURN_IF_ERROR(dev.restore(a.copies, chunk_bytes, a.chunks));
    bytes += a.size;
  }
  return bytes;
}

void Engine::end_range_memory(device::Device& dev, RangeState& r) {
  // The passes are over (each waited for): what the application freed inside the range goes now.
  for (auto& free : r.deferred_frees) {
    if (free) free();
  }
  r.deferred_frees.clear();
  r.deferred_bases.clear();
  for (const RangeAllocation& a : r.allocations) dev.free_storage(a.storage);
  r.allocations.clear();
  r.memops.clear();
  if (r.first_pass.saved) dev.free_storage(r.first_pass.storage);
  r.first_pass = {};
}

Status Engine::save_first_pass(device::Device& dev, RangeState& r) {
  // What the application's pass changed: the snapshot's chunks that differ now, and the memory
  // allocated inside the range (restored to its state at the allocation before every pass).
  const uint64_t chunk_bytes = options().chunk_bytes;
  ASSIGN_OR_RETURN(std::vector<uint64_t> changed, r.snapshot.changed_chunks(dev));
  RangeSaved& p = r.first_pass;
  p = {};
  constexpr uint64_t kAlign = 256;  // each region's storage starts aligned, as a snapshot's do
  uint64_t offset = 0, chunk = 0;
  auto add = [&](uint64_t live, uint64_t size) {
    p.copies.push_back({live, offset, size, chunk});
    p.bytes += size;
    offset += (size + kAlign - 1) / kAlign * kAlign;
    chunk += device::chunk_count(size, chunk_bytes);
  };
  for (uint64_t c : changed) {
    const auto [live, size] = r.snapshot.chunk_live(c);
    add(live, size);
  }
  for (const RangeAllocation& a : r.allocations) add(a.base, a.size);
  if (p.copies.empty()) return Status::Ok();  // nothing changed: nothing to put back
  ASSIGN_OR_RETURN(p.storage, range_storage(dev, offset));
  for (auto& c : p.copies) c.storage += p.storage.address;
  p.digests.assign(chunk, 0);
  if (Status s = dev.snapshot(p.copies, chunk_bytes, p.digests); !s.ok()) {
    dev.free_storage(p.storage);
    p = {};
    return s;
  }
  p.saved = true;
  return Status::Ok();
}

Result<uint64_t> Engine::put_back_first_pass(device::Device& dev, RangeState& r) {
  RangeSaved& p = r.first_pass;
  if (!p.saved) return uint64_t{0};
  const uint64_t chunk_bytes = options().chunk_bytes;
  // Only the chunks a later pass left otherwise (a kernel that is not deterministic).
  std::vector<uint64_t> differ;
  Status s = dev.find_changed(p.copies, chunk_bytes, p.digests, &differ);
  if (s.ok() && !differ.empty()) s = dev.restore(p.copies, chunk_bytes, differ);
  uint64_t bytes = 0;
  for (uint64_t c : differ) bytes += device::chunk_live(p.copies, chunk_bytes, c).second;
  dev.free_storage(p.storage);
  p = {};
  RETURN_IF_ERROR(s);
  return bytes;
}

}  // namespace kreplay::replay
