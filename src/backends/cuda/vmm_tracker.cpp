#include "backends/cuda/vmm_tracker.hpp"

#include <algorithm>

namespace kreplay::cuda {

void VmmTracker::on_create(uint64_t handle, uint64_t size) { handles_[handle] = size; }

void VmmTracker::on_release(uint64_t handle) {
  // The physical memory lives until its last mapping goes; views stay tracked until unmapped.
  handles_.erase(handle);
}

void VmmTracker::on_map(uint64_t va, uint64_t size, uint64_t offset, uint64_t handle) {
  mappings_[va] = Mapping{size, offset, handle, false};
  resync({handle, offset, size});
}

void VmmTracker::on_unmap(uint64_t va, uint64_t size) {
  std::vector<ViewKey> touched;
  for (auto it = mappings_.lower_bound(va); it != mappings_.end() && it->first < va + size;) {
    touched.push_back({it->second.handle, it->second.offset, it->second.size});
    it = mappings_.erase(it);
  }
  for (const auto& k : touched) resync(k);
}

void VmmTracker::on_set_access(uint64_t va, uint64_t size, bool writable) {
  std::vector<ViewKey> touched;
  for (auto it = mappings_.lower_bound(va); it != mappings_.end() && it->first < va + size; ++it) {
    if (it->first + it->second.size > va + size) continue;  // only mappings fully inside
    it->second.writable = writable;
    touched.push_back({it->second.handle, it->second.offset, it->second.size});
  }
  for (const auto& k : touched) resync(k);
}

void VmmTracker::resync(const ViewKey& key) {
  // Desired state: base = lowest writable va of the view; aliases = all other mappings.
  uint64_t base = 0;
  std::vector<uint64_t> others;
  for (const auto& [va, m] : mappings_) {
    if (m.handle != key.handle || m.offset != key.offset || m.size != key.size) continue;
    if (base == 0 && m.writable) {
      base = va;
    } else {
      others.push_back(va);
    }
  }
  if (base == 0) {
    // No writable view left: anything registered goes (the last unmap also lands here).
    others.clear();
  }
  // Drop the old registration and register afresh (rare events; simplicity over minimal churn).
  auto it = registered_vas_.find(key);
  uint64_t old_base = registered_.count(key) ? registered_[key] : 0;
  if (it != registered_vas_.end()) {
    if (old_base != 0) sink_.remove(old_base);
    registered_vas_.erase(it);
  }
  registered_.erase(key);
  if (base == 0) return;
  uint64_t region = sink_.add_region(base, key.size);
  std::vector<uint64_t> vas{base};
  for (uint64_t va : others) {
    sink_.add_alias(region, va, key.size);
    vas.push_back(va);
  }
  registered_[key] = base;
  registered_vas_[key] = std::move(vas);
}

}  // namespace kreplay::cuda
