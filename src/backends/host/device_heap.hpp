// The host device's device-side heap: what CUDA's in-kernel malloc/free (and new/delete) allocate
// from. As on CUDA, the heap is one region of device memory that the application never allocated
// and kreplay's inventory does not track, and the allocator's state lives in that region too: a
// table of blocks at its start, then the blocks. Saving the region's bytes therefore saves the
// heap's objects and its allocator together, and putting them back undoes every malloc and free
// a pass made (HostDevice::save_heap / restore_heap).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

namespace kreplay::hostrt {

class DeviceHeap {
 public:
  static constexpr size_t kBlockBytes = 64;
  /// A heap of about @p bytes (rounded to whole blocks; at least one block).
  explicit DeviceHeap(size_t bytes);

  /// First fit over whole blocks; nullptr when no run of free blocks is long enough (as device
  /// malloc returns NULL when the heap is exhausted).
  void* allocate(size_t bytes);
  /// False when @p p is not the start of a live allocation (a second free, or a pointer the heap
  /// never handed out): the caller faults, as a corrupted heap does on a GPU.
  bool release(void* p);
  /// Live allocations now.
  size_t live() const;
  /// The whole region, allocator table included. Read or written only while no kernel runs.
  std::span<std::byte> region() { return region_; }

 private:
  // Block table entries: 0 free; n > 0 the first block of an allocation of n blocks; kTail a block
  // inside an allocation.
  static constexpr uint32_t kTail = UINT32_MAX;
  uint32_t* table();
  const uint32_t* table() const;
  std::byte* block(size_t i) { return region_.data() + data_offset_ + i * kBlockBytes; }

  mutable std::mutex mu_;
  size_t blocks_ = 0;
  size_t data_offset_ = 0;
  std::vector<std::byte> region_;
};

}  // namespace kreplay::hostrt
