// Write-bounded snapshots (DESIGN.md §3): a window saves only the chunks its launch (or range) is
// predicted to write, and proves the prediction with chunk digests of all tracked memory.
//
//   before the application's pass  the device digests every chunk of tracked memory into its
//                                  baseline (or keeps the one the window before left, when
//                                  nothing changed memory since), and the predicted chunks are
//                                  copied to storage;
//   after the application's pass   the chunks whose digest changed are the write set: learned
//                                  (WriteSets), and the window replays only when they all lie
//                                  inside what was saved. Otherwise the launch ran once -- its
//                                  own pass, which the application sees -- and is declined
//                                  WRITE_SET_UNKNOWN;
//   after the last pass            the digests again: a later pass that wrote outside what was
//                                  saved is said loudly (the one case kreplay cannot undo) and
//                                  its chunks are learned.
//
// Which save a window takes (choose_save) under --snapshot auto: the full snapshot where it fits
// in device memory (nothing to predict, never a miss), else the write set where one is known,
// else the full snapshot where its part in pinned host memory stays small, else a learning run
// (the launch runs once, declined WRITE_SET_UNKNOWN, and its write set is learned for the next).
#include <fmt/format.h>

#include "common/logging.hpp"
#include "common/util.hpp"
#include "replay/engine.hpp"

namespace kreplay::replay {

void Engine::forget_write_sets_for_test(uint64_t agent) {
  DeviceSlot* s = slot(agent);
  if (s == nullptr) return;
  std::unique_lock window(s->window_mu);
  s->launch_writes.clear();
  s->range_writes.clear();
  s->baseline_valid = false;
}

bool Engine::baseline_supported(DeviceSlot& slot) {
  if (slot.baseline_support < 0) {
    // An empty layout: costs nothing, and tells whether the device keeps baselines at all.
    Status s = slot.device->digest_baseline({}, options().chunk_bytes);
    slot.baseline_support = s.ok() ? 1 : 0;
    slot.baseline_valid = false;
  }
  return slot.baseline_support == 1;
}

void Engine::choose_save(DeviceSlot& slot, const std::vector<Region>& regions, bool range,
                         bool allow_write_set, WriteSetWindow& ws) {
  const Options opt = options();
  device::Device& dev = *slot.device;
  ws.layout = ChunkLayout(regions, opt.chunk_bytes);
  ws.saved.clear();
  ws.zeroed.clear();
  ws.predicted = false;
  ws.learned = false;
  ws.kind = SaveKind::kFull;
  if (opt.snapshot_mode == KREPLAY_SNAPSHOT_MODE_FULL || !allow_write_set ||
      !baseline_supported(slot))
    return;
  const bool forced = opt.snapshot_mode == KREPLAY_SNAPSHOT_MODE_WRITE_SET;
  if (!forced) {
    std::lock_guard lock(slot.pool_mu);
    if (slot.pool.fits_device(dev, regions)) return;
  }
  if (predict_save(slot, range, ws)) return;
  if (!forced) {
    // A first launch: the full snapshot still replays it where the part that spills to pinned
    // host memory stays small.
    uint64_t need = 0;
    for (const Region& r : regions) need += r.size;
    std::lock_guard lock(slot.pool_mu);
    const uint64_t dev_cap = dev.storage_available(device::StorageTier::kDevice) +
                             slot.pool.held_bytes(device::StorageTier::kDevice);
    const uint64_t host = need > dev_cap ? need - dev_cap : 0;
    const uint64_t host_cap = dev.storage_available(device::StorageTier::kPinnedHost) +
                              slot.pool.held_bytes(device::StorageTier::kPinnedHost);
    if (host <= opt.auto_host_bytes && host <= host_cap) {
      ws.kind = SaveKind::kFull;
      ws.saved.clear();
      return;
    }
  }
  // Otherwise ws keeps predict_save's write set for nothing known: the pointers' guess. The
  // launch is replayed if everything else it writes held zeros before (fresh memory, as a first
  // write into a pool is); otherwise its own run is the only one, and its write set is learned
  // for the next.
}

bool Engine::predict_save(DeviceSlot& slot, bool range, WriteSetWindow& ws) {
  ws.kind = SaveKind::kWriteSet;
  WriteSets& sets = range ? slot.range_writes : slot.launch_writes;
  std::optional<std::vector<Extent>> predicted = sets.predict(ws.kernel, ws.args, ws.layout);
  ws.predicted = predicted.has_value();
  ws.saved = predicted ? std::move(*predicted) : std::vector<Extent>{};
  // Nothing learned, or only launches whose writes changed nothing (zeros over zeros): an output
  // passed by pointer starts where its argument points.
  if (ws.saved.empty()) ws.saved = WriteSets::pointer_chunks(ws.args, ws.layout);
  return ws.predicted;
}

Status Engine::take_baseline(DeviceSlot& slot, const WriteSetWindow& ws) {
  // Mapped host and managed memory can change with no call kreplay sees: never reused.
  bool host_writable = false;
  for (const Region& r : ws.layout.regions()) {
    host_writable |= r.kind == KREPLAY_MEMORY_KIND_HOST_MAPPED || r.kind == KREPLAY_MEMORY_KIND_MANAGED;
  }
  const bool reuse = slot.baseline_valid && !host_writable &&
                     slot.baseline_epoch == memory_epoch_.load(std::memory_order_acquire) &&
                     ws.layout.same_as(slot.baseline_layout, slot.baseline_chunk_bytes);
  // From here until keep_baseline() the window's own work changes memory.
  slot.baseline_valid = false;
  if (reuse) {
    stats_.baselines_reused.fetch_add(1, std::memory_order_relaxed);
    return Status::Ok();
  }
  RETURN_IF_ERROR(slot.device->digest_baseline(ws.layout.copies(), ws.layout.chunk_bytes()));
  slot.baseline_layout = ws.layout.copies();
  slot.baseline_chunk_bytes = ws.layout.chunk_bytes();
  stats_.baselines.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Result<Placement> Engine::save_extents(DeviceSlot& slot, const WriteSetWindow& ws,
                                       Snapshot& snapshot) {
  const Options opt = options();
  std::vector<Region> parts;
  parts.reserve(ws.saved.size());
  for (const Extent& x : ws.saved) {
    Region r;
    r.agent = slot.agent;
    r.base = x.lo;
    r.size = x.hi - x.lo;
    parts.push_back(r);
  }
  Result<Placement> placement = [&] {
    std::lock_guard lock(slot.pool_mu);
    return slot.pool.place(*slot.device, parts, opt.chunk_bytes, opt.max_snapshot_bytes);
  }();
  if (!placement.ok()) {
    return Error(placement.status().code(),
                 fmt::format("the {} it is predicted to write do not fit ({})",
                             format_bytes(extent_bytes(ws.saved)), placement.status().message()));
  }
  Placement used = *placement;
  RETURN_IF_ERROR(snapshot.take(*slot.device, std::move(placement).value(), opt.chunk_bytes));
  return used;
}

void Engine::keep_baseline(DeviceSlot& slot, const WriteSetWindow& ws) {
  if (!ws.layout.same_as(slot.baseline_layout, slot.baseline_chunk_bytes)) return;
  slot.baseline_valid = true;
  slot.baseline_epoch = memory_epoch_.load(std::memory_order_acquire);
}

Status Engine::measure_writes(DeviceSlot& slot, WriteSetWindow& ws, bool range,
                              uint64_t* changed_bytes, bool* covered) {
  *covered = false;
  std::vector<uint64_t> changed, was_zero;
  RETURN_IF_ERROR(slot.device->changed_since_baseline(ws.layout.copies(), ws.layout.chunk_bytes(),
                                                      /*update=*/true, &changed, &was_zero));
  ws.written = ws.layout.extents_of(changed);
  *changed_bytes = extent_bytes(ws.written);
  (range ? slot.range_writes : slot.launch_writes).learn(ws.kernel, ws.args, ws.written, ws.layout);
  ws.learned = true;
  // Every changed chunk must be saved, or have held zeros (zero_chunks puts those back).
  ws.zeroed.clear();
  uint64_t unknown = 0;
  size_t z = 0;
  for (uint64_t c : changed) {
    const std::vector<Extent> one = ws.layout.extents_of(std::span<const uint64_t>(&c, 1));
    if (covers(ws.saved, one)) continue;
    while (z < was_zero.size() && was_zero[z] < c) ++z;
    if (z < was_zero.size() && was_zero[z] == c) {
      ws.zeroed.push_back(c);
    } else {
      unknown += extent_bytes(one);
    }
  }
  *covered = unknown == 0;
  if (!*covered) {
    KR_DEBUG("write set missed: {} written, {} of it outside the {} saved and not zero before",
             format_bytes(*changed_bytes), format_bytes(unknown),
             format_bytes(extent_bytes(ws.saved)));
  }
  return Status::Ok();
}

Result<uint64_t> Engine::restore_zeroed(DeviceSlot& slot, const WriteSetWindow& ws) {
  if (ws.zeroed.empty()) return uint64_t{0};
  RETURN_IF_ERROR(slot.device->zero_chunks(ws.layout.copies(), ws.layout.chunk_bytes(), ws.zeroed));
  return extent_bytes(ws.layout.extents_of(ws.zeroed));
}

bool Engine::verify_last_pass(DeviceSlot& slot, WriteSetWindow& ws, uint64_t id,
                              const char* name) {
  std::vector<uint64_t> changed;
  if (Status s = slot.device->changed_since_baseline(ws.layout.copies(), ws.layout.chunk_bytes(),
                                                     /*update=*/true, &changed, nullptr);
      !s.ok()) {
    KR_WARN("dispatch {} ({}): the memory after its last pass could not be checked: {}", id,
            name ? name : "?", s.message());
    return true;
  }
  const std::vector<Extent> written = ws.layout.extents_of(changed);
  std::vector<Extent> known = ws.saved;
  for (const Extent& x : ws.layout.extents_of(ws.zeroed)) known.push_back(x);
  normalize(&known);
  if (covers(known, written)) return true;
  // A later pass wrote where the application's own pass did not: those chunks hold what that
  // pass wrote. Nothing saved them, so nothing can put them back; the next launches save them.
  std::vector<Extent> outside;
  for (const Extent& x : written) {
    if (!covers(known, std::span<const Extent>(&x, 1))) outside.push_back(x);
  }
  KR_ERROR("dispatch {} ({}): a replay pass wrote {} that the application's own pass did not "
           "write and kreplay had not saved (first at {:#x}); that memory now holds what the "
           "replay wrote. Later launches of the kernel save it too; --snapshot full avoids this",
           id, name ? name : "?", format_bytes(extent_bytes(outside)), outside.front().lo);
  std::vector<Extent> both = ws.saved;
  both.insert(both.end(), written.begin(), written.end());
  normalize(&both);
  slot.launch_writes.learn(ws.kernel, ws.args, both, ws.layout);
  return false;
}

void Engine::learn_full(DeviceSlot& slot, WriteSetWindow& ws, bool range, Snapshot& snapshot,
                        uint64_t* changed_bytes) {
  if (ws.kind != SaveKind::kFull || ws.learned) return;
  ws.learned = true;
  if (snapshot.placement().total_chunks != ws.layout.total_chunks()) return;  // another scope
  Result<std::vector<uint64_t>> changed = snapshot.changed_chunks(*slot.device);
  if (!changed.ok()) return;
  // The full snapshot numbers its chunks as the layout does (the same regions, by base).
  const std::vector<Extent> written = ws.layout.extents_of(*changed);
  *changed_bytes = extent_bytes(written);
  if (baseline_supported(slot))
    (range ? slot.range_writes : slot.launch_writes).learn(ws.kernel, ws.args, written, ws.layout);
}

}  // namespace kreplay::replay
