#include "backends/host/device_heap.hpp"

#include <algorithm>
#include <cstring>

#include "backends/host/host_device.hpp"
#include "common/env.hpp"

namespace kreplay::hostrt {

DeviceHeap::DeviceHeap(size_t bytes) {
  blocks_ = std::max<size_t>(1, bytes / kBlockBytes);
  data_offset_ = (blocks_ * sizeof(uint32_t) + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
  region_.assign(data_offset_ + blocks_ * kBlockBytes, std::byte{0});
}

uint32_t* DeviceHeap::table() {
  return reinterpret_cast<uint32_t*>(region_.data());
}
const uint32_t* DeviceHeap::table() const {
  return reinterpret_cast<const uint32_t*>(region_.data());
}

void* DeviceHeap::allocate(size_t bytes) {
  const size_t need = std::max<size_t>(1, (bytes + kBlockBytes - 1) / kBlockBytes);
  std::lock_guard lock(mu_);
  uint32_t* t = table();
  size_t run = 0;
  for (size_t i = 0; i < blocks_; ++i) {
    run = t[i] == 0 ? run + 1 : 0;
    if (run == need) {
      const size_t first = i + 1 - need;
      t[first] = static_cast<uint32_t>(need);
      for (size_t j = first + 1; j <= i; ++j) t[j] = kTail;
      return block(first);
    }
  }
  return nullptr;
}

bool DeviceHeap::release(void* p) {
  auto* b = static_cast<std::byte*>(p);
  std::lock_guard lock(mu_);
  if (b < region_.data() + data_offset_ || b >= region_.data() + region_.size()) return false;
  const size_t off = static_cast<size_t>(b - (region_.data() + data_offset_));
  if (off % kBlockBytes != 0) return false;
  uint32_t* t = table();
  const size_t first = off / kBlockBytes;
  const uint32_t n = t[first];
  if (n == 0 || n == kTail) return false;
  for (size_t j = first; j < first + n; ++j) t[j] = 0;
  return true;
}

size_t DeviceHeap::live() const {
  std::lock_guard lock(mu_);
  const uint32_t* t = table();
  return static_cast<size_t>(
      std::count_if(t, t + blocks_, [](uint32_t v) { return v != 0 && v != kTail; }));
}

// ---- kernels ----

void* ThreadContext::heap_malloc(size_t bytes) {
  return heap_ != nullptr ? heap_->allocate(bytes) : nullptr;
}

void ThreadContext::heap_free(void* p) {
  if (p == nullptr) return;  // free(NULL) does nothing, as in C
  if (heap_ == nullptr || !heap_->release(p)) trapped_ = true;
}

// ---- the device's side: save, restore, drop ----

DeviceHeap* HostDevice::heap() {
  std::call_once(heap_once_, [&] {
    size_t bytes = size_t{1} << 20;
    if (auto v = env::get("KREPLAY_HOST_HEAP")) {
      uint64_t parsed = 0;
      if (env::parse_bytes(*v, &parsed) && parsed > 0) bytes = parsed;
    }
    heap_ = std::make_unique<DeviceHeap>(bytes);
  });
  return heap_.get();
}

Result<uint64_t> HostDevice::save_heap() {
  if (!heap_restorable_.load()) {
    return Error(KREPLAY_STATUS_ERROR_NOT_AVAILABLE,
                 "this host device was told it cannot save its device heap");
  }
  if (!heap_set_up_.exchange(true)) {
    return Error(KREPLAY_STATUS_ERROR_NOT_INITIALIZED,
                 "the device heap is set up by the first launch that uses it, which runs once (as "
                 "a CUDA context's)");
  }
  auto region = heap()->region();
  std::lock_guard lock(heap_mu_);
  heap_saved_.assign(region.begin(), region.end());
  return static_cast<uint64_t>(heap_saved_.size());
}

Result<uint64_t> HostDevice::restore_heap() {
  std::lock_guard lock(heap_mu_);
  if (heap_saved_.empty()) return Error(KREPLAY_STATUS_ERROR_INTERNAL, "no device heap was saved");
  if (skip_heap_restore_.load()) return uint64_t{0};  // testing: what the restore prevents
  auto region = heap()->region();
  std::memcpy(region.data(), heap_saved_.data(), region.size());
  return static_cast<uint64_t>(region.size());
}

void HostDevice::drop_heap() {
  std::lock_guard lock(heap_mu_);
  heap_saved_.clear();
  heap_saved_.shrink_to_fit();
}

}  // namespace kreplay::hostrt
