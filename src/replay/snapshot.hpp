// Snapshot storage and the save/restore of one replay window (DESIGN.md §3).
//
// StoragePool keeps one device-tier and one pinned-host-tier block per device across dispatches
// and places each window's regions: device storage first, pinned host next, decline when neither
// fits. Snapshot saves every region with a per-chunk digest; the first restore compares live
// memory with the digests and copies back only the chunks that changed, and remembers them: later
// restores of the same window copy that learned set (or re-compare, with verify on).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.hpp"
#include "device/device.hpp"
#include "replay/inventory.hpp"

namespace kreplay::replay {

struct Placement {
  std::vector<device::CopyRegion> copies;
  uint64_t total_bytes = 0;
  uint64_t device_bytes = 0;
  uint64_t host_bytes = 0;
  uint64_t total_chunks = 0;
};

class StoragePool {
 public:
  /// Place @p regions into storage, growing the pool's blocks as needed. Errors:
  /// OUT_OF_RESOURCES when neither tier can hold them (or more than @p max_bytes, if non-zero).
  Result<Placement> place(device::Device& dev, const std::vector<Region>& regions,
                          uint64_t chunk_bytes, uint64_t max_bytes);
  /// Give every block back to the device.
  void release(device::Device& dev);
  uint64_t held_bytes(device::StorageTier tier) const;
  /// The most bytes the tier's block held at once.
  uint64_t peak_bytes(device::StorageTier tier) const;
  /// Whether @p regions fit the device tier alone (the block held plus what the device can give).
  bool fits_device(device::Device& dev, const std::vector<Region>& regions) const;
  /// Times release() gave storage back while some was held.
  uint64_t releases() const { return releases_; }

 private:
  Status ensure(device::Device& dev, device::StorageTier tier, device::Storage* block,
                uint64_t want, uint64_t minimum);
  device::Storage device_block_{};
  device::Storage host_block_{};
  uint64_t device_peak_ = 0;
  uint64_t host_peak_ = 0;
  uint64_t releases_ = 0;
};

/// One line for a snapshot of @p regions that did not fit (@p why: the placement's error): what it
/// needs, its largest allocation, the storage free on each tier, and -- where that allocation
/// holds much of the device, as a framework's preallocated arena does -- the setting that avoids it.
std::string snapshot_too_large_message(device::Device& dev, const std::vector<Region>& regions,
                                       const std::string& why);

class Snapshot {
 public:
  /// Save every placed region. @p chunk_bytes fixes the digest granularity.
  Status take(device::Device& dev, Placement placement, uint64_t chunk_bytes);
  /// Restore what the last pass changed; returns the bytes copied back.
  Result<uint64_t> restore(device::Device& dev, bool verify);

  const Placement& placement() const { return placement_; }
  /// The chunks whose live memory differs from the snapshot now, sorted (what the next restore
  /// copies back; computed once, as the first restore does, and kept for it).
  Result<std::vector<uint64_t>> changed_chunks(device::Device& dev);
  /// Live address and size of @p chunk.
  std::pair<uint64_t, uint64_t> chunk_live(uint64_t chunk) const;
  /// One digest of the placed regions' live memory now (Device::digest_live over every chunk).
  Result<uint64_t> live_digest(device::Device& dev);

 private:
  uint64_t chunk_size(uint64_t chunk) const;
  /// Find the chunks whose live memory differs from the snapshot and learn them (merged with
  /// what earlier passes changed, when already learned).
  Status learn_changed(device::Device& dev);

  Placement placement_;
  uint64_t chunk_bytes_ = 0;
  std::vector<uint64_t> digests_;
  std::vector<uint64_t> learned_;
  bool learned_valid_ = false;
};

}  // namespace kreplay::replay
