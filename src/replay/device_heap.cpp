// Launches that use the device-side heap (malloc, free, new or delete in device code): their
// passes would allocate and free the heap's objects again, so besides the window's snapshot the
// heap itself, its allocator's state included, is saved and put back before every later pass
// (Device::save_heap / restore_heap). A device that cannot declines them DEVICE_HEAP.
#include <fmt/format.h>

#include "common/logging.hpp"
#include "common/util.hpp"
#include "replay/engine.hpp"

namespace kreplay::replay {

namespace {

void warn_heap_not_saved(const char* kernel, const Status& why) {
  KR_WARN_ONCE("device-heap",
               "kernels whose code uses the device-side heap (malloc, free, new or delete in "
               "device code; first: {}) are not replayed: {}, and a second pass would allocate "
               "or free its objects again; they run once",
               kernel ? kernel : "?", why.message());
}

}  // namespace

kreplay_decline_reason_t Engine::save_device_heap(DispatchState& st) {
  device::Device& dev = *st.slot->device;
  const uint64_t t0 = now_ns();
  Result<uint64_t> saved = dev.save_heap();
  if (!saved.ok()) {
    warn_heap_not_saved(st.info.kernel_name, saved.status());
    return KREPLAY_DECLINE_REASON_DEVICE_HEAP;
  }
  st.heap_saved = true;
  const uint64_t t1 = now_ns();
  auto& out = st.outcome;
  out.bytes_snapshotted += *saved;
  out.snapshot_ns += t1 - t0;
  st.intervals.push_back({KREPLAY_REPLAY_INTERVAL_SNAPSHOT, 0, t0, t1, *saved});
  return KREPLAY_DECLINE_REASON_NONE;
}

Result<uint64_t> Engine::restore_device_heap(DispatchState& st) {
  Result<uint64_t> r = st.slot->device->restore_heap();
  if (!r.ok()) {
    return Error(r.status().code(),
                 fmt::format("the device heap could not be put back: {}", r.status().message()));
  }
  return r;
}

kreplay_decline_reason_t Engine::save_range_heap(device::Device& dev, RangeState& r) {
  const uint64_t t0 = now_ns();
  Result<uint64_t> saved = dev.save_heap();
  if (!saved.ok()) {
    warn_heap_not_saved(r.heap_kernel, saved.status());
    return KREPLAY_DECLINE_REASON_DEVICE_HEAP;
  }
  r.heap_saved = true;
  r.outcome.bytes_snapshotted += *saved;
  r.intervals.push_back({KREPLAY_REPLAY_INTERVAL_SNAPSHOT, 0, t0, now_ns(), *saved});
  return KREPLAY_DECLINE_REASON_NONE;
}

void Engine::drop_device_heap(DispatchState& st) {
  if (!st.heap_saved) return;
  st.heap_saved = false;
  if (st.slot != nullptr && st.slot->device != nullptr) st.slot->device->drop_heap();
}

}  // namespace kreplay::replay
