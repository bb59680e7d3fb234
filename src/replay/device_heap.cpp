// Launches that use the device-side heap (malloc, free, new or delete in device code): their
// passes would allocate and free the heap's objects again, so besides the window's snapshot the
// heap itself, its allocator's state included, is saved and put back before every later pass
// (Device::save_heap / restore_heap). A device that cannot declines them DEVICE_HEAP.
#include <fmt/format.h>

#include "common/logging.hpp"
#include "common/util.hpp"
#include "replay/engine.hpp"

namespace kreplay::replay {

bool Engine::save_device_heap(device::Device& dev, const char* kernel, uint64_t* bytes,
                              uint64_t* ns, std::vector<kreplay_replay_interval_t>* intervals) {
  const uint64_t t0 = now_ns();
  Result<uint64_t> saved = dev.save_heap();
  if (!saved.ok() && saved.status().code() == KREPLAY_STATUS_ERROR_NOT_INITIALIZED) {
    // The device sets its heap up at this launch (CUDA: a context's first launch that uses it):
    // nothing could be saved, and this launch alone runs once.
    KR_INFO("{}: {}", kernel ? kernel : "a launch that uses the device heap",
            saved.status().message());
    return false;
  }
  if (!saved.ok()) {
    KR_WARN_ONCE("device-heap",
                 "kernels whose code uses the device-side heap (malloc, free, new or delete in "
                 "device code; first: {}) are not replayed: {}, and a second pass would allocate "
                 "or free its objects again; they run once",
                 kernel ? kernel : "?", saved.status().message());
    return false;
  }
  const uint64_t t1 = now_ns();
  *bytes += *saved;
  if (ns != nullptr) *ns += t1 - t0;
  intervals->push_back({KREPLAY_REPLAY_INTERVAL_SNAPSHOT, 0, t0, t1, *saved});
  return true;
}

Result<uint64_t> Engine::restore_device_heap(device::Device& dev) {
  Result<uint64_t> r = dev.restore_heap();
  if (!r.ok()) {
    return Error(r.status().code(),
                 fmt::format("the device heap could not be put back: {}", r.status().message()));
  }
  return r;
}

void Engine::drop_device_heap(DispatchState& st) {
  if (!st.heap_saved) return;
  st.heap_saved = false;
  if (st.slot != nullptr && st.slot->device != nullptr) st.slot->device->drop_heap();
}

}  // namespace kreplay::replay
